import CSQLite
import Dispatch
import Storage
import Synchronization

/// Copies the WAL back into the database file on its own connection and queue,
/// so that no group commit ever carries a checkpoint of any size.
///
/// With SQLite's automatic checkpoint the commit that crossed the threshold
/// wrote thousands of pages and fsynced the database before returning: under
/// load one batch in a few thousand took 10–50 ms, and every `ok` and delivery
/// of that batch waited for it. Here the writer's WAL hook only notes the
/// WAL's size; past `thresholdFrames` one PASSIVE checkpoint runs beside the
/// writer (it waits for nobody), and the writer restarts the WAL from its start
/// on the first commit after a checkpoint that copied everything.
///
/// Under a steady stream of commits a pass beside the writer never copies
/// everything: frames land while it runs. The WAL then never restarts and
/// grows without bound, every append going into fresh file pages (`rooms` at
/// 18,000 msgs/s: a 67 MB WAL after 10 s, a quarter of the gateway's core in
/// `pwrite`). So when the writer's next commit finds the WAL at most
/// `catchUpFrames` past what the pass copied, the writer copies that rest
/// itself (one fsync; 1–4 ms measured there), nothing can land meanwhile, and
/// the WAL restarts; further behind, another pass runs beside it, shorter
/// than the last.
///
/// On a saturated core the passes fall behind for good: at background priority
/// they get a few percent of it (`rooms` saturated: a 783 MB WAL after 15 s, 9 %
/// of the core zeroing fresh pages). So at `limitFrames` the writer copies
/// everything itself, whatever a pass has done: that commit waits for the copy,
/// and the WAL stays within about `limitFrames`.
final class WALCheckpointer: Sendable {
    let thresholdFrames: Int32
    let catchUpFrames: Int32
    let limitFrames: Int32
    private let connection: Mutex<SQLiteConnection>
    private let queue: DispatchQueue
    private let isRunning = Atomic<Bool>(false)
    /// How far into the WAL the last pass copied (frames), -1 once the writer has looked.
    private let copiedThrough = Atomic<Int32>(-1)

    /// `limitFrames` defaults to three times `thresholdFrames`.
    init(path: String, synchronous: SQLiteStore.Synchronous, thresholdFrames: Int32, catchUpFrames: Int32 = 256,
         limitFrames: Int32? = nil, queue: DispatchQueue) throws(StoreError) {
        let connection = try SQLiteConnection(path: path)
        // A store closed a moment ago may still be checkpointing: wait for it here, and only
        // here (the checkpoints themselves must not wait on readers).
        try connection.execute("""
            PRAGMA busy_timeout = 5000;
            PRAGMA synchronous = \(synchronous.rawValue);
            PRAGMA busy_timeout = 0;
            """)
        self.connection = Mutex(connection)
        self.thresholdFrames = thresholdFrames
        self.catchUpFrames = catchUpFrames
        self.limitFrames = limitFrames ?? Int32(clamping: Int(thresholdFrames) * 3)
        self.queue = queue
    }

    /// Makes `writer`'s commits report the WAL's size here, instead of checkpointing inline.
    /// The writer connection must not outlive this checkpointer.
    func observe(_ writer: SQLiteConnection) {
        writer.setWALHook({ context, writer, _, frames in
            if let context, let writer {
                Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().walHasGrown(to: frames, writer: writer)
            }
            return SQLITE_OK
        }, context: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Called on the writer's queue after each commit, with the writer's handle.
    private func walHasGrown(to frames: Int32, writer: OpaquePointer) {
        guard frames >= thresholdFrames else {
            copiedThrough.store(-1, ordering: .relaxed)   // the WAL restarted: the last pass's count is stale
            return
        }
        if frames >= limitFrames {
            // Busy (nothing copied) while a pass is copying; the next commit tries again.
            _ = SQLiteConnection.checkpointPassive(writer)
            return
        }
        guard isRunning.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let copied = copiedThrough.exchange(-1, ordering: .acquiringAndReleasing)
        if copied >= 0, frames >= copied, frames - copied <= catchUpFrames {
            // A failure loses nothing: the next commit past the threshold starts a pass again.
            _ = SQLiteConnection.checkpointPassive(writer)
            isRunning.store(false, ordering: .releasing)
            return
        }
        queue.async { self.checkpoint() }
    }

    /// A failed checkpoint loses nothing (the frames stay in the WAL): the next
    /// commit past the threshold tries again.
    private func checkpoint() {
        let progress = try? connection.withLock { connection throws(StoreError) in try connection.checkpointPassive() }
        if let progress { copiedThrough.store(progress.copiedFrames, ordering: .releasing) }
        isRunning.store(false, ordering: .releasing)
    }
}
