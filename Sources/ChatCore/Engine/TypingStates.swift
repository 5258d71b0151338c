/// Who is typing where (PROTOCOL.md §14), on a monotonic clock: a user's `typing.start`
/// in a channel is forwarded at most once every `forwardInterval`, and the state ends
/// with `typing.stop`, a message, or `expiry` without a new `typing.start`.
struct TypingStates {
    struct Key: Hashable {
        var channel: ChannelID
        var user: UserID
    }

    static let forwardInterval: Milliseconds = 2_000
    static let expiry: Milliseconds = 10_000

    private var states: [Key: (forwardedAt: Milliseconds, expiresAt: Milliseconds)] = [:]

    /// A `typing.start` at `now`: true when it is to be forwarded.
    mutating func start(_ key: Key, now: Milliseconds) -> Bool {
        if var state = states[key], now - state.forwardedAt < Self.forwardInterval {
            state.expiresAt = now + Self.expiry
            states[key] = state
            return false
        }
        states[key] = (now, now + Self.expiry)
        return true
    }

    /// Ends the state (`typing.stop`, a message): true when there was one.
    mutating func stop(_ key: Key) -> Bool {
        states.removeValue(forKey: key) != nil
    }

    /// Ends the state if it has expired by `now`: true when it did.
    mutating func expire(_ key: Key, now: Milliseconds) -> Bool {
        guard let state = states[key], state.expiresAt <= now else { return false }
        states[key] = nil
        return true
    }
}
