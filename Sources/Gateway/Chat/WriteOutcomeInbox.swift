import ChatCore
import Synchronization

/// Store outcomes on their way from the store's queue to the core: appended from any
/// thread and taken by the core in one hop per burst (the outcome that starts a burst
/// schedules the take), instead of one closure per write. Outcomes keep the order in which
/// they were appended.
final class WriteOutcomeInbox: Sendable {
    typealias Outcome = (write: WriteID, outcome: WriteOutcome)

    private let pending = Mutex<[Outcome]>([])

    /// Appends an outcome: true when it starts a burst, and the caller schedules a `take`.
    func append(_ write: WriteID, _ outcome: WriteOutcome) -> Bool {
        pending.withLock { pending in
            pending.append((write, outcome))
            return pending.count == 1
        }
    }

    /// Moves every outcome appended so far into `batch` (given empty, so the two arrays
    /// trade storage instead of allocating).
    func take(into batch: inout [Outcome]) {
        pending.withLock { swap(&$0, &batch) }
    }
}
