import Dispatch
import Synchronization

/// Runs work posted from any thread on one serial `DispatchQueue`, in the order
/// posted, with one Dispatch hop per burst instead of one per item.
///
/// Under load the core hands a loop hundreds of replies and deliveries per
/// commit, and the loops hand the core a request per frame: one `async` each
/// (a continuation, a queue push and pop, an atomic per side) was a few percent
/// of the gateway's core. Here a post is an append under an uncontended lock; the
/// first post after a run schedules the next run.
///
/// Anything the queue runs directly (`queue.async`, sources) still interleaves
/// with the bursts, as it would with separate `async`s: a burst runs when its
/// first item would have.
public final class BatchingQueue: @unchecked Sendable {
    public let queue: DispatchQueue
    private let pending = Mutex(Pending())
    /// The burst being run; swapped with `pending.work` so both keep their storage. Touched only on `queue`.
    private var running: [@Sendable () -> Void] = []

    private struct Pending: ~Copyable {
        var work: [@Sendable () -> Void] = []
        var scheduled = false
    }

    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    public func async(_ work: @escaping @Sendable () -> Void) {
        let schedule = pending.withLock { pending in
            pending.work.append(work)
            if pending.scheduled { return false }
            pending.scheduled = true
            return true
        }
        if schedule { queue.async { self.runPending() } }
    }

    private func runPending() {
        pending.withLock { pending in
            swap(&pending.work, &running)
            pending.scheduled = false   // work posted from here on goes in the next burst
        }
        for work in running { work() }
        running.removeAll(keepingCapacity: true)
    }
}
