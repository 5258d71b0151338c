import CSQLite
import Dispatch
import Synchronization

/// Copies the WAL back into the database file on its own connection and queue,
/// so that no group commit ever carries a checkpoint.
///
/// With SQLite's automatic checkpoint the commit that crossed the threshold
/// wrote thousands of pages and fsynced the database before returning: under
/// load one batch in a few thousand took 10–50 ms, and every `ok` and delivery
/// of that batch waited for it. Here the writer's WAL hook only notes the
/// WAL's size; past `thresholdFrames` one PASSIVE checkpoint runs beside the
/// writer (it waits for nobody), and the writer restarts the WAL from its start
/// on the first commit after a checkpoint that copied everything.
final class WALCheckpointer: Sendable {
    let thresholdFrames: Int32
    private let connection: Mutex<SQLiteConnection>
    private let queue: DispatchQueue
    private let isRunning = Atomic<Bool>(false)

    init(path: String, synchronous: SQLiteStore.Synchronous, thresholdFrames: Int32, queue: DispatchQueue) throws(StoreError) {
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA synchronous = \(synchronous.rawValue)")
        self.connection = Mutex(connection)
        self.thresholdFrames = thresholdFrames
        self.queue = queue
    }

    /// Makes `writer`'s commits report the WAL's size here, instead of checkpointing inline.
    /// The writer connection must not outlive this checkpointer.
    func observe(_ writer: SQLiteConnection) {
        writer.setWALHook({ context, _, _, frames in
            if let context {
                Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().walHasGrown(to: frames)
            }
            return SQLITE_OK
        }, context: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called on the writer's queue after each commit.
    private func walHasGrown(to frames: Int32) {
        guard frames >= thresholdFrames,
              isRunning.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async { self.checkpoint() }
    }

    /// A failed checkpoint loses nothing (the frames stay in the WAL): the next
    /// commit past the threshold tries again.
    private func checkpoint() {
        _ = try? connection.withLock { connection throws(StoreError) in try connection.checkpointPassive() }
        isRunning.store(false, ordering: .releasing)
    }
}
