/// How often a member's `channel.read` goes out (PROTOCOL.md §14), on a monotonic clock:
/// the first change at once, then at most one per interval per member and channel, the
/// latest mark at the end of the interval. Every other member ends up with the reader's
/// newest mark. The interval grows with the channel (10 ms per member, at least 1 s, at most
/// 30 s): every member reading a room sends each of the others about 100 events a second
/// in all, however large the room, instead of a number that grows with its square.
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

    static let minimumInterval: Milliseconds = 1_000
    static let maximumInterval: Milliseconds = 30_000

    /// The interval in a channel of `members`.
    static func interval(members: Int) -> Milliseconds {
        min(maximumInterval, max(minimumInterval, Milliseconds(members) * 10))
    }

    private var sentAt: [Key: Milliseconds] = [:]
    private var scheduled: Set<Key> = []

    /// A reader's mark moved at `now`, in a channel of `members`.
    mutating func moved(_ key: Key, members: Int, now: Milliseconds) -> Decision {
        if scheduled.contains(key) { return .waiting }
        let interval = Self.interval(members: members)
        if let last = sentAt[key], now - last < interval {
            scheduled.insert(key)
            return .later(afterMilliseconds: last + interval - now)
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

    /// Forgets readers whose last event is older than the longest interval (they would send at
    /// once anyway), when there are many.
    mutating func prune(now: Milliseconds) {
        guard sentAt.count > 65_536 else { return }
        sentAt = sentAt.filter { now - $0.value < Self.maximumInterval || scheduled.contains($0.key) }
    }
}
