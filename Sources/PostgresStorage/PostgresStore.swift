import ChatCore
import Dispatch
import Logging
import NIOPosix
import PostgresNIO
import Storage

/// The PostgreSQL `Store` (`storage.backend: postgres`): the source of truth that
/// several gateway nodes share. Writes are group committed by one writer per node
/// (`PostgresGroupCommitWriter`); `seq` comes from the channel row inside the
/// message's transaction, so nodes never hand out the same one. Reads use the same
/// connection pool. All of it runs on postgres-nio's own event loop thread, never on
/// the gateway's loops.
public final class PostgresStore: Store {
    /// Reads, the readiness probe, start-up.
    private let client: PostgresClient
    /// The group commit's own connections: reads, however many, never make a write wait
    /// for a connection (a burst of them once held the whole pool while writes failed at
    /// their connection deadline).
    private let writeClient: PostgresClient
    private let runners: [Task<Void, Never>]
    private let group: MultiThreadedEventLoopGroup
    private let writer: PostgresGroupCommitWriter
    private let logger: Logger
    private let snapshot: StoreSnapshot
    /// How long a whole read may take (a connection, then the query) before it fails.
    private let readWait: Duration

    public typealias CommitObserver = @Sendable (_ writes: Int, _ nanoseconds: UInt64) -> Void

    /// Connects, migrates the schema and loads the start-up snapshot.
    /// - Parameters:
    ///   - url: `postgres://user[:password]@host[:port]/database[?sslmode=disable|require|verify-full]`
    ///     (`PostgresURL`); no error repeats it.
    ///   - connectionWait: how long a write waits for a connection before it fails (a read: three times
    ///     this for the connection and the query together).
    ///   - startWait: how long the first connection may take: an unreachable server, or one whose
    ///     certificate `sslmode=verify-full` refuses, fails the start instead of holding it forever
    ///     (postgres-nio keeps retrying the connection while a lease waits).
    ///   - strictBlocking: §5 strict mode (what a 1-to-1 message is stored hidden for).
    public static func open(url: String, logger: Logger, connectionWait: Duration = .seconds(2),
                            startWait: Duration = .seconds(10), strictBlocking: Bool = false,
                            commitObserver: CommitObserver? = nil) async throws(StoreError) -> PostgresStore {
        let configuration: PostgresClient.Configuration
        do throws(PostgresURL.Problem) {
            configuration = try PostgresURL.configuration(url)
        } catch {
            throw error.storeError
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var readConfiguration = configuration, writeConfiguration = configuration
        // The writer has two batches in flight at most.
        writeConfiguration.options.maximumConnections = 2
        readConfiguration.options.maximumConnections = max(1, configuration.options.maximumConnections - 2)
        let client = PostgresClient(configuration: readConfiguration, eventLoopGroup: group, backgroundLogger: logger)
        let writeClient = PostgresClient(configuration: writeConfiguration, eventLoopGroup: group, backgroundLogger: logger)
        // Immediate: run() marks the clients running before the first lease below.
        let runners = [client, writeClient].map { client in
            Task.immediate(executorPreference: DispatchTaskExecutor.shared) { await client.run() }
        }
        do {
            do {
                try await Deadline.run(startWait) { _ in try await client.withOpenConnection { _ in } }
            } catch is Deadline.Exceeded {
                throw StoreError("no connection within \(startWait)")
            }
            try await PostgresSchema.migrate(client, logger: logger)
            let snapshot = try await PostgresReads.snapshot(client, logger: logger)
            return PostgresStore(client: client, writeClient: writeClient, runners: runners, group: group, logger: logger, snapshot: snapshot,
                                 connectionWait: connectionWait, strictBlocking: strictBlocking,
                                 commitObserver: commitObserver)
        } catch {
            for runner in runners { runner.cancel() }
            for runner in runners { await runner.value }
            try? await group.shutdownGracefully()
            throw StoreError("cannot open PostgreSQL at \(PostgresURL.redacted(url)): \(PostgresErrors.describe(error))")
        }
    }

    private init(client: PostgresClient, writeClient: PostgresClient, runners: [Task<Void, Never>], group: MultiThreadedEventLoopGroup, logger: Logger,
                 snapshot: StoreSnapshot, connectionWait: Duration, strictBlocking: Bool, commitObserver: CommitObserver?) {
        self.client = client
        self.writeClient = writeClient
        self.runners = runners
        self.group = group
        self.logger = logger
        self.snapshot = snapshot
        self.readWait = connectionWait * 3
        self.writer = PostgresGroupCommitWriter(client: writeClient, logger: logger, connectionWait: connectionWait,
                                                strictBlocking: strictBlocking, commitObserver: commitObserver)
    }

    /// postgres-nio's configuration for `url` (tools and tests that need a client of their own).
    public static func clientConfiguration(url: String) throws(StoreError) -> PostgresClient.Configuration {
        do throws(PostgresURL.Problem) {
            return try PostgresURL.configuration(url)
        } catch {
            throw error.storeError
        }
    }

    /// What is wrong with `url` as `storage.postgresUrl` (nil: nothing), in words that do not
    /// repeat it: the configuration check names the key and this, and stops start-up.
    public static func urlProblem(_ url: String) -> String? {
        do throws(PostgresURL.Problem) {
            _ = try PostgresURL.configuration(url)
            return nil
        } catch {
            return error.text
        }
    }

    deinit {
        // The clients close their connections on `group` once their runs end: the group
        // shuts down after that, not under them.
        let (runners, group) = (self.runners, self.group)
        for runner in runners { runner.cancel() }
        Task(executorPreference: DispatchTaskExecutor.shared) {
            for runner in runners { await runner.value }
            try? await group.shutdownGracefully()
        }
    }

    /// The state read when the store was opened (`open` loads it; the gateway asks once, at start).
    public func loadSnapshot() throws(StoreError) -> StoreSnapshot { snapshot }

    public func enqueue(_ write: StoreWrite,
                        completion: @escaping @Sendable (Result<StoreWriteResult, StoreError>) -> Void) {
        writer.enqueue(write, completion: completion)
    }

    public func history(channelID: ChannelID, viewer: UserID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int, thread: Int64?,
                        completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.history(connection, channelID: channelID, viewer: viewer, beforeSeq: beforeSeq,
                                            afterSeq: afterSeq, limit: limit, thread: thread, logger: logger)
        }
    }

    public func changes(channelID: ChannelID, viewer: UserID, afterVersion: Int64, limit: Int,
                        completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.changes(connection, channelID: channelID, viewer: viewer, afterVersion: afterVersion,
                                            limit: limit, logger: logger)
        }
    }

    public func attributions(channelID: ChannelID, seqs: ClosedRange<Int64>, users: Set<UserID>, viewer: UserID,
                             completion: @escaping @Sendable (Result<MessageAttributions, StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.attributions(connection, channelID: channelID, seqs: seqs, users: users, viewer: viewer,
                                                 logger: logger)
        }
    }

    public func messageStates(channelID: ChannelID, seqs: [Int64],
                              completion: @escaping @Sendable (Result<[MessageState], StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.messageStates(connection, channelID: channelID, seqs: seqs, logger: logger)
        }
    }

    public func message(sender: UserID, clientMessageID: String,
                        completion: @escaping @Sendable (Result<Message?, StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.message(connection, sender: sender, clientMessageID: clientMessageID, logger: logger)
        }
    }

    public func users(_ ids: [UserID], completion: @escaping @Sendable (Result<[User], StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.users(connection, ids, logger: logger)
        }
    }

    public func flags(limit: Int, afterID: Int64?, completion: @escaping @Sendable (Result<[Flag], StoreError>) -> Void) {
        let logger = self.logger
        read(completion) { connection in
            try await PostgresReads.flags(connection, limit: limit, afterID: afterID, logger: logger)
        }
    }

    public func streams(of channels: [ChannelID], completion: @escaping @Sendable (Result<ChannelStreams, StoreError>) -> Void) {
        let (client, wait, logger) = (self.client, readWait, self.logger)
        Task(executorPreference: DispatchTaskExecutor.shared) {
            do {
                completion(.success(try await Deadline.run(wait) { _ in
                    try await PostgresReads.streams(client, of: channels, logger: logger)
                }))
            } catch let error as StoreError {
                completion(.failure(error))
            } catch {
                completion(.failure(StoreError(PostgresErrors.describe(error))))
            }
        }
    }

    /// Waits until every write enqueued before has committed (or failed). Not from a
    /// completion, and not from a task of the cooperative pool.
    public func flush() {
        let done = DispatchSemaphore(value: 0)
        writer.enqueue(nil) { _ in done.signal() }
        done.wait()
    }

    /// The same without blocking a thread.
    public func flushed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writer.enqueue(nil) { _ in continuation.resume() }
        }
    }

    /// Whether the database answers now (`/readyz`).
    public func isReachable(within wait: Duration = .seconds(1)) async -> Bool {
        let (client, logger) = (self.client, self.logger)
        return (try? await Deadline.run(wait) { _ in
            try await client.withOpenConnection { _ = try await $0.query("SELECT 1", logger: logger) }
        }) != nil
    }

    private func read<T: Sendable>(_ completion: @escaping @Sendable (Result<T, StoreError>) -> Void,
                                   _ body: @escaping @Sendable (PostgresConnection) async throws -> T) {
        let (client, wait) = (self.client, readWait)
        Task(executorPreference: DispatchTaskExecutor.shared) {
            do {
                completion(.success(try await Deadline.run(wait) { _ in try await client.withOpenConnection(body) }))
            } catch let error as StoreError {
                completion(.failure(error))
            } catch {
                completion(.failure(StoreError(PostgresErrors.describe(error))))
            }
        }
    }
}
