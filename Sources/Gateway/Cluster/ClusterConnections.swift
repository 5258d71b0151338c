import ChatCore
import EventLoop
import Redis

/// A user's live connections across nodes (PROTOCOL.md §6, §13): a sorted set per user,
/// one member per connection scored by when it expires unless its node refreshes it, so the
/// connections of a node killed with `kill -9` stop counting by themselves. They decide the
/// cluster-wide connection cap, who is offline everywhere (for push), and presence: adding
/// a user's first live entry or removing its last announces it online or offline
/// (`ClusterPresence`).
///
/// A user's keys share the user's hash slot (`chat:conns:{<user>}`), so on a Redis Cluster
/// the users spread over the masters; the presence set is elsewhere. So admission and
/// release are two steps: the user's script answers whether the entry was the first or
/// the last, with a version that only grows per user (Redis's clock, in µs), and the
/// presence change goes to `ClusterPresence.announce`, which applies it only when its
/// version is newer than the user's last one applied: two nodes racing a release and an
/// admission end in the later one's state whatever order their second steps run in.
struct ClusterConnections: Sendable {
    /// How long a connection entry counts without a refresh.
    static let entryMilliseconds: Int64 = 15_000

    static func key(_ user: UserID) -> String { "chat:conns:" + UserHashTag.of(user) }
    /// The user's last version, in the user's slot.
    static func versionKey(_ user: UserID) -> String { key(user) + ":version" }

    /// The next version of KEYS[2]'s user: Redis's clock in µs, above the last one given
    /// (kept for ARGV[ttl] ms); in `version` (the snippet's other local is `previous`).
    private static func nextVersion(ttlArgument: Int) -> String {
        """
        local clock = redis.call('TIME')
        local version = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
        local previous = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
        if version <= previous then version = previous + 1 end
        redis.call('SET', KEYS[2], string.format('%.0f', version), 'PX', ARGV[\(ttlArgument)])
        """
    }

    /// Admission under the cap: prunes the expired entries, counts, adds. Answers
    /// {admitted 0|1, first live entry 0|1, version}. KEYS: conns, version. ARGV: now, cap,
    /// expiry, entry, ttl.
    static let admitScript = """
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
        local before = redis.call('ZCARD', KEYS[1])
        if before >= tonumber(ARGV[2]) then return {0, 0, 0} end
        redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        \(nextVersion(ttlArgument: 5))
        return {1, before == 0 and 1 or 0, version}
        """

    /// A closed connection's entry removed. Answers {removed 0|1, last live entry 0|1,
    /// version}. KEYS: conns, version. ARGV: entry, now, ttl.
    static let releaseScript = """
        local removed = redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
        if removed == 0 then return {0, 0, 0} end
        local last = redis.call('ZCARD', KEYS[1]) == 0 and 1 or 0
        \(nextVersion(ttlArgument: 3))
        return {1, last, version}
        """

    /// The user's newest live entry's expiry (0: none left) and last version, for
    /// `ClusterPresence.expire`. KEYS: conns, version. ARGV: now.
    static let newestScript = """
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
        local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
        local version = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
        if #newest == 0 then return {0, version} end
        return {tonumber(newest[2]), version}
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
            guard redis.canSend else {
                decided(nil)
                return
            }
            let expiry = now + Self.entryMilliseconds
            redis.send(["EVAL", Self.admitScript, "2", Self.key(user), Self.versionKey(user), "\(now)", "\(cap)",
                        "\(expiry)", entry, "\(Self.entryMilliseconds * 2)"], key: Self.key(user)) { reply in
                guard let answer = Self.answer(reply), answer.done == 0 || answer.done == 1 else {
                    decided(nil)
                    return
                }
                decided(answer.done == 1)
                if answer.done == 1 && answer.edge == 1 {
                    presence.announce(online: true, user: user, version: answer.version, expiry: expiry, now: now)
                }
            }
        }
    }

    /// A script's {done, first or last, version}; nil when the reply is not that.
    private static func answer(_ reply: RedisReply) -> (done: Int64, edge: Int64, version: Int64)? {
        guard case .array(let parts) = reply, parts.count == 3,
              case .integer(let done) = parts[0], case .integer(let edge) = parts[1], case .integer(let version) = parts[2]
        else { return nil }
        return (done, edge, version)
    }

    /// Of `users`, those with no unexpired connection entry on any node; when Redis cannot
    /// answer, all of them (this node already found them offline here: a push too many
    /// rather than a message never announced).
    func offline(_ users: [UserID], now: Milliseconds, answer: @escaping @Sendable (Set<UserID>) -> Void) {
        redis.loop.execute { [redis] in
            guard !users.isEmpty, redis.canSend else {
                answer(Set(users))
                return
            }
            // One count per user (each user's set is in its own slot); a failed count counts as offline.
            var result: Set<UserID> = []
            var answered = 0
            for user in users {
                redis.send(["ZCOUNT", Self.key(user), "\(now)", "+inf"], key: Self.key(user)) { reply in
                    var live = false
                    if case .integer(let count) = reply { live = count > 0 }
                    if !live { result.insert(user) }
                    answered += 1
                    if answered == users.count { answer(result) }
                }
            }
        }
    }

    /// Forgets a closed connection's entry (announcing the user offline when it was its last);
    /// `done` gets false when Redis could not be asked.
    func release(user: UserID, entry: String, now: Milliseconds, done: @escaping @Sendable (Bool) -> Void) {
        redis.loop.execute { [redis, presence] in
            guard redis.canSend else {
                done(false)
                return
            }
            redis.send(["EVAL", Self.releaseScript, "2", Self.key(user), Self.versionKey(user), entry, "\(now)",
                        "\(Self.entryMilliseconds * 2)"], key: Self.key(user)) { reply in
                done(!reply.isFailure)
                if let answer = Self.answer(reply), answer.done == 1, answer.edge == 1 {
                    presence.announce(online: false, user: user, version: answer.version, expiry: now, now: now)
                }
            }
        }
    }

    /// Pushes the expiry of this node's live connection entries forward (every few seconds).
    func refresh(_ entries: [(user: UserID, entry: String)], now: Milliseconds) {
        redis.loop.execute { [redis, presence] in
            guard redis.canSend else { return }
            let expiry = now + Self.entryMilliseconds
            for (user, entry) in entries {
                redis.send(["ZADD", Self.key(user), "\(expiry)", entry], key: Self.key(user))
            }
            // One expiry per user's set, however many of its connections live here.
            for user in Set(entries.map(\.user)) {
                redis.send(["PEXPIRE", Self.key(user), "\(Self.entryMilliseconds * 2)"], key: Self.key(user))
                presence.refresh(user, expiry: expiry, now: now)
            }
        }
    }
}
