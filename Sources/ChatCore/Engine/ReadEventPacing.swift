/// How often a member's `channel.read` goes out (PROTOCOL.md §14), on a monotonic clock:
/// the first change at once, then at most one per `interval` per member and channel, the
/// latest mark at the end of the interval. Every other member ends up with the reader's
/// newest mark; a client that marks every message it receives in a busy room does not
/// multiply the room's traffic by its member count.
struct ReadEventPacing: Sendable {
    struct Key: Hashable, Sendable {
        var channel: ChannelID
        var user: UserID
    }

    enum Decision: Equatable {
        /// Send the reader's mark now.
        case send
        /// Send it once `afterMilliseconds` have passed (call `due` then).
        case later(afterMilliseconds: Milliseconds)
        /// A send is already due later; it will carry the newest mark.
        case waiting
    }

    static let interval: Milliseconds = 1_000

    private var sentAt: [Key: Milliseconds] = [:]
    private var scheduled: Set<Key> = []

    /// A reader's mark moved at `now`.
    mutating func moved(_ key: Key, now: Milliseconds) -> Decision {
        if scheduled.contains(key) { return .waiting }
        if let last = sentAt[key], now - last < Self.interval {
            scheduled.insert(key)
            return .later(afterMilliseconds: last + Self.interval - now)
        }
        sentAt[key] = now
        return .send
    }

    /// The interval after a held-back change has passed: true when its mark is to go out now.
    mutating func due(_ key: Key, now: Milliseconds) -> Bool {
        guard scheduled.remove(key) != nil else { return false }
        sentAt[key] = now
        return true
    }

    /// Forgets readers whose last event is older than an interval (they would send at once anyway).
    mutating func prune(now: Milliseconds) {
        guard sentAt.count > 4096 else { return }
        sentAt = sentAt.filter { now - $0.value < Self.interval || scheduled.contains($0.key) }
    }
}
