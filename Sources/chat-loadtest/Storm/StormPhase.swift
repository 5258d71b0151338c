import Dispatch
import Synchronization

/// One step of the storm that every client (or publisher) takes part in once: connect,
/// drop, reconnect, catch up. Starts the participants (at most `window` at once, the
/// next as one finishes), counts who finished and how, and notes when the last one did.
final class StormPhase: Sendable {
    let name: String
    let total: Int
    let startedAt: UInt64
    /// No participant retries or waits past it.
    let deadline: UInt64
    let succeeded = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    /// Handshakes the server resumed.
    let resumed = Atomic<Int>(0)
    /// Connection attempts after the first (refused, reset, timed out, HTTP error).
    let retries = Atomic<Int>(0)
    /// Requests answered ERR_RATE_LIMITED (and sent again later).
    let rateLimited = Atomic<Int>(0)
    /// History pages read.
    let pages = Atomic<Int>(0)
    private let remaining: Atomic<Int>
    private let nextIndex = Atomic<Int>(0)
    private let lastEndedAt = Atomic<UInt64>(0)
    private let done = DispatchSemaphore(value: 0)
    /// Starts participant i (on its loop); nil for a phase whose participants start themselves.
    private let start: (@Sendable (Int, StormPhase) -> Void)?
    private let failures = Mutex<[String: Int]>([:])

    init(name: String, total: Int, timeoutSeconds: Double, start: (@Sendable (Int, StormPhase) -> Void)? = nil) {
        self.name = name
        self.start = start
        self.total = total
        startedAt = MonotonicClock.now()
        deadline = startedAt + MonotonicClock.nanoseconds(timeoutSeconds)
        remaining = Atomic(total)
        if total == 0 { done.signal() }
    }

    /// Starts participants 0…total-1 with `start`, `window` at a time (0: all at once).
    func launch(window: Int) {
        for _ in 0..<(window > 0 ? min(window, total) : total) { startNext() }
    }

    private func startNext() {
        guard let start else { return }
        let index = nextIndex.add(1, ordering: .relaxed).oldValue
        if index < total { start(index, self) }
    }

    /// A participant is done with this phase, for better or worse (once each).
    func finish(ok: Bool) {
        if ok {
            succeeded.add(1, ordering: .relaxed)
        } else {
            failed.add(1, ordering: .relaxed)
        }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            lastEndedAt.store(MonotonicClock.now(), ordering: .releasing)
            done.signal()
        } else {
            startNext()
        }
    }

    /// One failed attempt (retried or final), by reason.
    func noteFailure(_ reason: String) {
        failures.withLock { $0[reason, default: 0] += 1 }
    }

    /// Waits until everyone finished or the deadline passed, printing `progress` each
    /// second; true when everyone finished.
    func wait(progress: (StormPhase) -> String) -> Bool {
        while true {
            let now = MonotonicClock.now()
            if now >= deadline { return done.wait(timeout: .now()) == .success }
            let slice = min(deadline, now + 1_000_000_000) - now
            if done.wait(timeout: .now() + .nanoseconds(Int(slice))) == .success { return true }
            Console.error("chat-loadtest: \(name): \(progress(self))")
        }
    }

    var finished: Int { succeeded.load(ordering: .relaxed) + failed.load(ordering: .relaxed) }

    /// When the last participant finished (now while some are still going).
    var endedAt: UInt64 {
        let end = lastEndedAt.load(ordering: .acquiring)
        return end != 0 ? end : MonotonicClock.now()
    }

    /// From the start to the last participant's finish.
    var seconds: Double { Double(endedAt - startedAt) / 1e9 }

    var failureReasons: [String: Int] { failures.withLock { $0 } }
}
