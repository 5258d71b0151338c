import Synchronization

/// Wall-clock time in milliseconds, injected so every time-based rule is tested without sleeping.
public protocol Clock: Sendable {
    /// Wall-clock time (Unix epoch): timestamps clients see.
    func now() -> Milliseconds
    /// Milliseconds that never go back (rate limits, throttles): immune to wall-clock steps.
    func monotonicNow() -> Milliseconds
}

/// A clock a test moves by hand.
public final class ManualClock: Clock, Sendable {
    private let current: Mutex<Milliseconds>

    public init(_ start: Milliseconds = 1_700_000_000_000) {
        current = Mutex(start)
    }

    public func now() -> Milliseconds { current.withLock { $0 } }

    public func monotonicNow() -> Milliseconds { now() }

    public func advance(by milliseconds: Milliseconds) {
        current.withLock { $0 += milliseconds }
    }
}
