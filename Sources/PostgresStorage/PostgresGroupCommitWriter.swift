import ChatCore
import Dispatch
import EventLoop
import Logging
import PostgresNIO
import Storage

/// The group commit of the PostgreSQL backend, shaped like the SQLite one
/// (`Storage/GroupCommitWriter`): `enqueue` appends and returns; one drain task
/// at a time takes *all* pending writes, runs them in one transaction
/// (`PostgresBatch`), then calls their completions in enqueue order, and loops
/// while more arrived.
///
/// Failures: a batch the server refuses as a whole (a `clientMessageId` stored by
/// another node after the lookup, a deadlock with another node) is rolled back and
/// run once more; a second refusal, a lost connection, or no connection within
/// `connectionWait`, fails every write of the batch (the engine answers
/// `ERR_INTERNAL`, never a false `ok`). A batch whose COMMIT was sent when the
/// connection broke may have committed: a retry with the same `clientMessageId`
/// finds it.
final class PostgresGroupCommitWriter: Sendable {
    typealias Completion = @Sendable (Result<StoreWriteResult, StoreError>) -> Void
    typealias CommitObserver = @Sendable (_ writes: Int, _ nanoseconds: UInt64) -> Void

    private let inbox = GroupCommitInbox()
    private let client: PostgresClient
    private let logger: Logger
    private let connectionWait: Duration
    private let commitObserver: CommitObserver?
    private let strictBlocking: Bool
    /// How long a transaction that has its connection may take before its writes fail
    /// (a query sent just as the server closed the connection is never answered).
    static let transactionLimit = Duration.seconds(10)

    init(client: PostgresClient, logger: Logger, connectionWait: Duration, strictBlocking: Bool,
         commitObserver: CommitObserver?) {
        self.strictBlocking = strictBlocking
        self.client = client
        self.logger = logger
        self.connectionWait = connectionWait
        self.commitObserver = commitObserver
    }

    func enqueue(_ write: StoreWrite?, completion: @escaping Completion) {
        let startDrain = inbox.append(PendingWrite(write: write, completion: completion))
        // Off the cooperative pool: a commit must not wait for threads that callers may be blocking.
        if startDrain { Task(executorPreference: DispatchTaskExecutor.shared) { await self.drain() } }
    }

    private func drain() async {
        var batch: [PendingWrite] = []
        while inbox.takeAll(into: &batch) {
            let writes = batch.map(\.write)
            let start = DispatchTime.now().uptimeNanoseconds
            let results = await commit(writes)
            if let commitObserver, writes.contains(where: { $0 != nil }), case .success? = results.first {
                commitObserver(writes.count, DispatchTime.now().uptimeNanoseconds - start)
            }
            for (item, result) in zip(batch, results) { item.completion(result) }
        }
    }

    private func commit(_ writes: [StoreWrite?]) async -> [Result<StoreWriteResult, StoreError>] {
        if writes.allSatisfy({ $0 == nil }) { return writes.map { _ in .success(.done) } }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await withConnection { connection in
                    try await connection.query("BEGIN", logger: self.logger)
                    do {
                        var batch = PostgresBatch(connection: connection, logger: self.logger,
                                                  strictBlocking: self.strictBlocking)
                        let results = try await batch.apply(writes)
                        try await connection.query("COMMIT", logger: self.logger)
                        return results
                    } catch {
                        if !connection.isClosed {
                            _ = try? await connection.query("ROLLBACK", logger: self.logger)
                        }
                        throw error
                    }
                }
            } catch {
                let description = PostgresErrors.describe(error)
                if attempt == 1, PostgresErrors.isServerRefusal(error) {
                    logger.notice("store.batch_retried", metadata: ["writes": "\(writes.count)", "error": "\(description)"])
                    continue
                }
                let failure = StoreError("batch of \(writes.count) writes rolled back: \(description)")
                return writes.map { _ in .failure(failure) }
            }
        }
    }

    /// A pooled connection for `body`, failing when none comes within `connectionWait`
    /// (the database is down or unreachable). Once `body` has begun it is cut short only
    /// when its connection has closed and the driver did not say so, or after
    /// `transactionLimit`: its writes then fail with an unknown outcome (a retry with the
    /// same `clientMessageId` finds a message that did commit).
    private func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        let (client, wait) = (self.client, connectionWait)
        do {
            return try await Deadline.run(wait, startedLimit: Self.transactionLimit) { deadline in
                try await client.withOpenConnection { connection in
                    guard deadline.begin(lostIf: { connection.isClosed }) else { throw CancellationError() }
                    return try await body(connection)
                }
            }
        } catch let exceeded as Deadline.Exceeded {
            throw StoreError("PostgreSQL: \(exceeded)")
        }
    }
}

