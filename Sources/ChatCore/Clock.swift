/// Wall-clock time in milliseconds, injected so every time-based rule is tested without sleeping.
public protocol Clock: Sendable {
    func now() -> Milliseconds
}

/// A clock a test moves by hand.
public final class ManualClock: Clock, @unchecked Sendable {
    private var current: Milliseconds
    private let lock = SpinLock()

    public init(_ start: Milliseconds = 1_700_000_000_000) {
        current = start
    }

    public func now() -> Milliseconds { lock.withLock { current } }

    public func advance(by milliseconds: Milliseconds) {
        lock.withLock { current += milliseconds }
    }
}
