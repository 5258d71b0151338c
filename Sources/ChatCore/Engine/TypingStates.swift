/// Who is typing where (PROTOCOL.md §14), on a monotonic clock: a user's `typing.start`
/// in a channel is forwarded at most once every `forwardInterval`, and the state ends
/// with `typing.stop`, a message, or `expiry` without a new `typing.start`.
///
/// The interval counts from the last forwarded start whatever happened since: a
/// `typing.stop` does not reset it, so alternating start and stop forwards at most one
/// start and one stop per interval. A start inside the interval after a stop makes the
/// user typing without announcing it yet: it is announced when the interval ends if the
/// user is still typing then (`announceIfDue`), and ends silently if not.
struct TypingStates {
    struct Key: Hashable {
        var channel: ChannelID
        var user: UserID
    }

    static let forwardInterval: Milliseconds = 2_000
    static let expiry: Milliseconds = 10_000

    private struct State {
        var forwardedAt: Milliseconds
        var expiresAt: Milliseconds
        var isTyping: Bool
        /// Its start went out to the channel (so its end goes out too).
        var isAnnounced: Bool
    }

    private var states: [Key: State] = [:]
    /// Stale entries (not typing, interval over) are swept when the table grows past this.
    private var sweepThreshold = 1024

    enum StartOutcome: Equatable {
        /// Forward `typing.start` now.
        case forward
        /// Already announced, or already waiting for its announcement.
        case held
        /// Typing again inside the interval after a stop: announce it at this time if the
        /// user is still typing then.
        case announceAt(Milliseconds)
    }

    /// A `typing.start` at `now`.
    mutating func start(_ key: Key, now: Milliseconds) -> StartOutcome {
        if var state = states[key], now - state.forwardedAt < Self.forwardInterval {
            let wasTyping = state.isTyping
            state.expiresAt = now + Self.expiry
            state.isTyping = true
            states[key] = state
            return wasTyping ? .held : .announceAt(state.forwardedAt + Self.forwardInterval)
        }
        states[key] = State(forwardedAt: now, expiresAt: now + Self.expiry, isTyping: true, isAnnounced: true)
        if states.count > sweepThreshold { sweep(now: now) }
        return .forward
    }

    /// A start held back by the interval is announced once it is over and the user still
    /// types: true when `typing.start` is to be forwarded now.
    mutating func announceIfDue(_ key: Key, now: Milliseconds) -> Bool {
        guard var state = states[key], state.isTyping, !state.isAnnounced,
              now - state.forwardedAt >= Self.forwardInterval else { return false }
        state.forwardedAt = now
        state.isAnnounced = true
        states[key] = state
        return true
    }

    /// Ends the state (`typing.stop`, a message): true when its start had been announced.
    mutating func stop(_ key: Key) -> Bool {
        guard var state = states[key], state.isTyping else { return false }
        let announced = state.isAnnounced
        state.isTyping = false
        state.isAnnounced = false
        states[key] = state
        return announced
    }

    /// Ends the state if it has expired by `now`: true when it did and had been announced.
    mutating func expire(_ key: Key, now: Milliseconds) -> Bool {
        guard let state = states[key], state.isTyping, state.expiresAt <= now else { return false }
        return stop(key)
    }

    /// Drops the entries that no longer hold anything back.
    private mutating func sweep(now: Milliseconds) {
        states = states.filter { $0.value.isTyping || now - $0.value.forwardedAt < Self.forwardInterval }
        sweepThreshold = max(1024, states.count * 2)
    }
}
