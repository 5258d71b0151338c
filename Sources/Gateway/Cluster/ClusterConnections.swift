import ChatCore
import EventLoop
import Redis

/// A user's live connections across nodes (PROTOCOL.md §6, §13): a sorted set per user,
/// one member per connection scored by when it expires unless its node refreshes it, so the
/// connections of a node killed with `kill -9` stop counting by themselves. They decide the
/// cluster-wide connection cap, who is offline everywhere (for push), and presence: adding
/// a user's first live entry or removing its last announces it online or offline
/// (`ClusterPresence`) in the same atomic step.
struct ClusterConnections: Sendable {
    /// How long a connection entry counts without a refresh.
    static let entryMilliseconds: Int64 = 15_000

    static func key(_ user: UserID) -> String { "chat:conns:" + user }

    /// Admission under the cap: prunes the expired entries, counts, adds (returns 1, or 0 at
    /// the cap), and announces the user online when this is its first live entry.
    /// KEYS: conns, online. ARGV: now, cap, expiry, entry, ttl, user, seal.
    static let admitAndAnnounceScript = """
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
        local before = redis.call('ZCARD', KEYS[1])
        if before >= tonumber(ARGV[2]) then return 0 end
        redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        redis.call('ZADD', KEYS[2], 'GT', ARGV[3], ARGV[6])
        if before == 0 then redis.call('PUBLISH', 'chat:presence', ARGV[7] .. '1 ' .. ARGV[1] .. ' ' .. ARGV[6]) end
        return 1
        """

    /// A closed connection's entry removed; the user announced offline when it was its last
    /// live one. KEYS: conns, online. ARGV: entry, now, user, seal.
    static let releaseAndAnnounceScript = """
        local removed = redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
        if removed == 1 and redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZREM', KEYS[2], ARGV[3]) == 1 then
          redis.call('PUBLISH', 'chat:presence', ARGV[4] .. '0 ' .. ARGV[2] .. ' ' .. ARGV[3])
        end
        return removed
        """

    /// The 1-based indexes of the keys (connection sets) with no entry expiring after ARGV[1].
    static let offlineScript = """
        local offline = {}
        for i, key in ipairs(KEYS) do
          if redis.call('ZCOUNT', key, ARGV[1], '+inf') == 0 then offline[#offline + 1] = i end
        end
        return offline
        """

    private let redis: ClusterRedis
    private let presence: ClusterPresence

    init(redis: ClusterRedis, presence: ClusterPresence) {
        self.redis = redis
        self.presence = presence
    }

    /// Admits one more connection of `user` under the cluster-wide `cap`; `decided` gets nil
    /// when Redis cannot answer (this node's own count decides then).
    func admit(user: UserID, entry: String, cap: Int, now: Milliseconds, decided: @escaping @Sendable (Bool?) -> Void) {
        redis.loop.execute { [redis, presence] in
            guard let publisher = redis.connectedPublisher else {
                decided(nil)
                return
            }
            let expiry = now + Self.entryMilliseconds
            publisher.send(["EVAL", Self.admitAndAnnounceScript, "2", Self.key(user), ClusterPresence.onlineKey, "\(now)",
                            "\(cap)", "\(expiry)", entry, "\(Self.entryMilliseconds * 2)", user,
                            presence.seal(online: true, at: now, user: user)]) { reply in
                guard case .integer(let admitted) = reply, admitted == 0 || admitted == 1 else {
                    decided(nil)
                    return
                }
                decided(admitted == 1)
            }
        }
    }

    /// Of `users`, those with no unexpired connection entry on any node; when Redis cannot
    /// answer, all of them (this node already found them offline here: a push too many
    /// rather than a message never announced).
    func offline(_ users: [UserID], now: Milliseconds, answer: @escaping @Sendable (Set<UserID>) -> Void) {
        redis.loop.execute { [redis] in
            guard !users.isEmpty, let publisher = redis.connectedPublisher else {
                answer(Set(users))
                return
            }
            publisher.send(["EVAL", Self.offlineScript, "\(users.count)"] + users.map(Self.key) + ["\(now)"]) { reply in
                guard case .array(let indexes) = reply else {
                    answer(Set(users))
                    return
                }
                var result: Set<UserID> = []
                for case .integer(let index) in indexes where index >= 1 && Int(index) <= users.count {
                    result.insert(users[Int(index) - 1])
                }
                answer(result)
            }
        }
    }

    /// Forgets a closed connection's entry (announcing the user offline when it was its last);
    /// `done` gets false when Redis could not be asked.
    func release(user: UserID, entry: String, now: Milliseconds, done: @escaping @Sendable (Bool) -> Void) {
        redis.loop.execute { [redis, presence] in
            guard let publisher = redis.connectedPublisher else {
                done(false)
                return
            }
            publisher.send(["EVAL", Self.releaseAndAnnounceScript, "2", Self.key(user), ClusterPresence.onlineKey, entry,
                            "\(now)", user, presence.seal(online: false, at: now, user: user)]) { reply in
                done(!reply.isFailure)
            }
        }
    }

    /// Pushes the expiry of this node's live connection entries forward (every few seconds).
    func refresh(_ entries: [(user: UserID, entry: String)], now: Milliseconds) {
        redis.loop.execute { [redis, presence] in
            guard let publisher = redis.connectedPublisher else { return }
            let expiry = now + Self.entryMilliseconds
            for (user, entry) in entries {
                publisher.send(["ZADD", Self.key(user), "\(expiry)", entry]) { _ in }
            }
            // One expiry per user's set, however many of its connections live here.
            for user in Set(entries.map(\.user)) {
                publisher.send(["PEXPIRE", Self.key(user), "\(Self.entryMilliseconds * 2)"]) { _ in }
                presence.refresh(user, expiry: expiry, now: now, on: publisher)
            }
        }
    }
}
