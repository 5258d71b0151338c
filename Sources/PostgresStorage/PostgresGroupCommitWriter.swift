import ChatCore
import Dispatch
import Logging
import PostgresNIO
import Storage

/// The group commit of the PostgreSQL backend, shaped like the SQLite one
/// (`SQLiteStorage/GroupCommitWriter`): `enqueue` appends and returns; one drain task
/// at a time takes *all* pending writes, runs them in one transaction
/// (`PostgresBatch`), then calls their completions in enqueue order, and loops
/// while more arrived.
///
/// Two batches in flight: once a batch holds its channel rows, the drain may start
/// the next one on another connection, so that it looks up and locks while the first
/// commits (the commit waits for the WAL flush). Only batches of messages overlap, and
/// never two that share a unique key (`PostgresCommitInFlight.mayBeFollowed(by:)`);
/// anything else waits until the batch before has been answered. The second stays
/// behind the first: it locks the first's channel rows with its own, so its
/// `FOR UPDATE` returns only when the first transaction has ended and it reads the
/// counters as the first left them; before its COMMIT it asks whether the first
/// attempt of the first committed, and if not it rolls back and runs again once the
/// first has its final result. So no message takes a lower `seq` than one enqueued
/// before it, and completions are called in enqueue order across both.
///
/// Failures: a batch the server refuses as a whole (a `clientMessageId` stored by
/// another node after the lookup, a deadlock with another node, a value one write
/// carries that the server will not store) is rolled back and run once more, each
/// write in a savepoint of its own, so that a write the server refuses again fails
/// alone. A connection lost before the batch's COMMIT was sent (the server terminated
/// it, the pool handed out one that was closing) stored nothing: the batch runs again
/// on another connection for up to `connectionWait`. A second refusal of the whole, a
/// connection lost after that, or no connection within `connectionWait`, fails every
/// write of the batch (the engine answers
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

    /// The batch before ended without committing its first attempt: this one must not
    /// commit ahead of that batch's retry.
    private struct PredecessorRolledBack: Error {}

    /// An attempt that failed before its COMMIT was sent: it stored nothing.
    private struct NotCommitted: Error {
        var underlying: any Error
    }

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
        var inFlight: PostgresCommitInFlight?
        while true {
            if let previous = inFlight {
                guard inbox.takePending(into: &batch) else {
                    await previous.delivered.value
                    inFlight = nil
                    continue
                }
            } else if !inbox.takeAll(into: &batch) {
                return
            }
            let current = PostgresCommitInFlight(writes: batch.map(\.write))
            var predecessor = inFlight
            if let previous = inFlight, !previous.mayBeFollowed(by: current) {
                await previous.delivered.value
                predecessor = nil
            }
            let completions = batch.map(\.completion)
            Task(executorPreference: DispatchTaskExecutor.shared) {
                await self.run(current, completions: completions, after: predecessor)
            }
            // The next batch may start only once this one holds its channel rows.
            _ = await current.lockedChannels.value
            inFlight = current
        }
    }

    /// Commits `current`, then calls its completions once those of `predecessor` have been.
    private func run(_ current: PostgresCommitInFlight, completions: [Completion],
                     after predecessor: PostgresCommitInFlight?) async {
        let start = DispatchTime.now().uptimeNanoseconds
        let results = await commit(current, after: predecessor)
        current.finished.set(())
        if let predecessor { await predecessor.delivered.value }
        if let commitObserver, current.writes.contains(where: { $0 != nil }), case .success? = results.first {
            commitObserver(current.writes.count, DispatchTime.now().uptimeNanoseconds - start)
        }
        for (completion, result) in zip(completions, results) { completion(result) }
        current.delivered.set(())
    }

    private func commit(_ current: PostgresCommitInFlight, after predecessor: PostgresCommitInFlight?) async
        -> [Result<StoreWriteResult, StoreError>]
    {
        let writes = current.writes
        if writes.allSatisfy({ $0 == nil }) {
            current.attemptEnded(committed: true)
            return writes.map { _ in .success(.done) }
        }
        var predecessor = predecessor
        var attempt = 0
        /// After a refusal: each write in its own savepoint.
        var isolated = false
        let started = ContinuousClock.now
        var reconnects = 0
        while true {
            attempt += 1
            let (after, alsoLock, isolate) = (predecessor, predecessor?.lockedChannels.current ?? [], isolated)
            do {
                let results = try await withConnection { connection in
                    let results: [Result<StoreWriteResult, StoreError>]
                    do {
                        try await connection.query("BEGIN", logger: self.logger)
                        var batch = PostgresBatch(connection: connection, logger: self.logger,
                                                  strictBlocking: self.strictBlocking)
                        batch.alsoLock = alsoLock
                        batch.channelsLocked = { current.lockedChannels.set($0) }
                        results = isolate ? try await batch.applyEach(writes) : try await batch.apply(writes)
                        if let after, await !after.firstAttemptCommitted.value { throw PredecessorRolledBack() }
                    } catch {
                        if !connection.isClosed {
                            _ = try? await connection.query("ROLLBACK", logger: self.logger)
                        }
                        throw error is PredecessorRolledBack ? error : NotCommitted(underlying: error)
                    }
                    // From here a lost connection leaves the outcome unknown.
                    try await connection.query("COMMIT", logger: self.logger)
                    return results
                }
                current.attemptEnded(committed: true)
                return results
            } catch is PredecessorRolledBack {
                current.attemptEnded(committed: false)
                await predecessor?.finished.value
                predecessor = nil
                attempt -= 1  // not this batch's refusal: it runs again, now alone
            } catch let failure as NotCommitted where PostgresErrors.isConnectionLoss(failure.underlying)
                        && ContinuousClock.now - started < connectionWait {
                // The transaction died with its connection before COMMIT was sent: nothing
                // of it is stored, and another connection may serve it (the pool replaces
                // the ones the server closed).
                current.attemptEnded(committed: false)
                reconnects += 1
                attempt -= 1
                if reconnects == 1 {
                    logger.notice("store.batch_reconnected", metadata: [
                        "writes": .stringConvertible(writes.count), "error": "\(PostgresErrors.describe(failure.underlying))"])
                }
                try? await Task.sleep(for: .milliseconds(min(10 * reconnects, 200)))
            } catch {
                current.attemptEnded(committed: false)
                let underlying = (error as? NotCommitted)?.underlying ?? error
                let description = PostgresErrors.describe(underlying)
                if attempt == 1, PostgresErrors.isServerRefusal(underlying) {
                    logger.notice("store.batch_retried", metadata: ["writes": .stringConvertible(writes.count), "error": "\(description)"])
                    isolated = writes.count > 1
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

