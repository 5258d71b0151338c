import Synchronization

/// A value set once and awaited by any number of tasks: the first `set` wins, later
/// ones are ignored; `value` returns at once when it is set, else when it is.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Mutex(State())

    init() {}

    func set(_ value: Value) {
        let waiters: [CheckedContinuation<Value, Never>]? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters ?? [] { waiter.resume(returning: value) }
    }

    /// The value if it is set already.
    var current: Value? { state.withLock { $0.value } }

    var value: Value {
        get async {
            if let value = current { return value }
            return await withCheckedContinuation { continuation in
                let value: Value? = state.withLock { state in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let value { continuation.resume(returning: value) }
            }
        }
    }
}
