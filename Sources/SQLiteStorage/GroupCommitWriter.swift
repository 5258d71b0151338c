import ChatCore
import Dispatch
import Storage
import Synchronization

/// The single writer: group commit of every pending write.
///
/// `enqueue` appends to a lock-protected list and returns. One serial queue
/// drains it: it swaps out *all* pending writes at once, runs them in one
/// `BEGIN IMMEDIATE … COMMIT`, then calls their completions in enqueue order,
/// and loops while more arrived during the commit. It never waits to fill a
/// batch: when idle, a lone write commits at once; under load, batches grow by
/// themselves to whatever arrived during the previous commit.
///
/// Failure handling:
/// - A write that fails on its own (unknown channel, constraint violation)
///   makes the batch roll back and re-run with one savepoint per write, so only
///   that write's completion gets `.failure`; the others commit.
/// - A batch-level failure (BEGIN, COMMIT, I/O) rolls everything back and every
///   completion of the batch gets `.failure`; nothing of it is visible, and the
///   seq counters are restored (no gap).
public final class GroupCommitWriter: Sendable {
    typealias Completion = @Sendable (Result<StoreWriteResult, StoreError>) -> Void
    /// Runs inside the transaction just before COMMIT; throwing fails the batch.
    /// Test-only fault injection.
    typealias CommitHook = @Sendable ([StoreWrite]) throws(StoreError) -> Void
    /// Told each committed batch's number of writes and its BEGIN…COMMIT time in nanoseconds.
    public typealias CommitObserver = @Sendable (_ writes: Int, _ nanoseconds: UInt64) -> Void

    private let inbox = GroupCommitInbox()
    /// Touched only by the drain loop on `queue`; the mutex is never contended.
    private let applier: Mutex<WriteApplier>
    private let queue: DispatchQueue
    private let beforeCommit: CommitHook?
    private let commitObserver: CommitObserver?
    /// Held so it outlives the connection whose WAL hook points at it.
    private let checkpointer: WALCheckpointer?
    private static let onWriterQueue = DispatchSpecificKey<Bool>()

    init(connection: sending SQLiteConnection, label: String, checkpointer: WALCheckpointer? = nil,
         beforeCommit: CommitHook? = nil, commitObserver: CommitObserver? = nil) {
        checkpointer?.observe(connection)
        self.checkpointer = checkpointer
        self.applier = Mutex(WriteApplier(connection: connection))
        self.queue = DispatchQueue(label: label, qos: .userInitiated)
        self.beforeCommit = beforeCommit
        self.commitObserver = commitObserver
        queue.setSpecific(key: Self.onWriterQueue, value: true)
    }

    func enqueue(_ write: StoreWrite, completion: @escaping Completion) {
        append(PendingWrite(write: write, completion: completion))
    }

    /// Blocks until every write enqueued before this call has committed (or
    /// failed) and its completion has run. Must not be called from a completion.
    func flush() {
        precondition(DispatchQueue.getSpecific(key: Self.onWriterQueue) != true,
                     "SQLiteStore.flush() called on the writer queue (from a completion) would deadlock")
        let done = DispatchSemaphore(value: 0)
        append(PendingWrite(write: nil, completion: { _ in done.signal() }))
        done.wait()
    }

    private func append(_ item: PendingWrite) {
        if inbox.append(item) { queue.async { self.drain() } }
    }

    private func drain() {
        var batch: [PendingWrite] = []
        var writes: [StoreWrite?] = []
        while inbox.takeAll(into: &batch) {
            // The writes are moved out of the batch, not copied (each holds a whole message).
            writes.removeAll(keepingCapacity: true)
            for index in batch.indices { writes.append(batch[index].write.take()) }
            let start = DispatchTime.now().uptimeNanoseconds
            let results = applier.withLock { applier in commit(writes, with: applier) }
            if let commitObserver, writes.contains(where: { $0 != nil }), case .success? = results.first {
                commitObserver(writes.count, DispatchTime.now().uptimeNanoseconds - start)
            }
            for (item, result) in zip(batch, results) { item.completion(result) }
        }
    }

    // MARK: one batch

    private func commit(_ writes: [StoreWrite?], with applier: WriteApplier) -> [Result<StoreWriteResult, StoreError>] {
        if writes.allSatisfy({ $0 == nil }) { return writes.map { _ in .success(.done) } }
        let connection = applier.connection
        do throws(StoreError) {
            try connection.statement("BEGIN IMMEDIATE").run()
            var results: [Result<StoreWriteResult, StoreError>]
            do throws(StoreError) {
                results = try applyAll(writes, with: applier)
            } catch {
                // One write failed: redo the batch isolating each write in a savepoint.
                try connection.statement("ROLLBACK").run()
                applier.batchRolledBack()
                try connection.statement("BEGIN IMMEDIATE").run()
                results = try applyEachIsolated(writes, with: applier)
            }
            try applier.storeAdvancedCounters()
            if let beforeCommit { try beforeCommit(writes.compactMap { $0 }) }
            try connection.statement("COMMIT").run()
            applier.batchCommitted()
            return results
        } catch {
            if !connection.isAutocommit { try? connection.statement("ROLLBACK").run() }
            applier.batchRolledBack()
            let failure = StoreError("batch of \(writes.count) writes rolled back: \(error.description)")
            return writes.map { _ in .failure(failure) }
        }
    }

    /// The fast path: every write in one transaction, no savepoints.
    private func applyAll(_ writes: [StoreWrite?], with applier: WriteApplier) throws(StoreError)
        -> [Result<StoreWriteResult, StoreError>]
    {
        var results: [Result<StoreWriteResult, StoreError>] = []
        results.reserveCapacity(writes.count)
        for write in writes {
            guard let write else { results.append(.success(.done)); continue }
            results.append(.success(try applier.apply(write)))
        }
        return results
    }

    /// The slow path after a failed write: each write in its own savepoint, so a
    /// failing one is undone alone and reported alone.
    private func applyEachIsolated(_ writes: [StoreWrite?], with applier: WriteApplier) throws(StoreError)
        -> [Result<StoreWriteResult, StoreError>]
    {
        let connection = applier.connection
        let savepoint = try connection.statement("SAVEPOINT write")
        let release = try connection.statement("RELEASE write")
        let undo = try connection.statement("ROLLBACK TO write")
        var results: [Result<StoreWriteResult, StoreError>] = []
        results.reserveCapacity(writes.count)
        for write in writes {
            guard let write else { results.append(.success(.done)); continue }
            try savepoint.run()
            do throws(StoreError) {
                results.append(.success(try applier.apply(write)))
            } catch {
                try undo.run()
                results.append(.failure(error))
            }
            try release.run()
        }
        return results
    }
}
