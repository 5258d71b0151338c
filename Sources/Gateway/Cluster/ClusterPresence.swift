import ChatCore
import EventLoop
import Redis

/// Presence across nodes (PROTOCOL.md §14: a user is online while it holds a live
/// connection on any node). The connection entries (`ClusterConnections`, expiring unless
/// their node refreshes them) decide; `chat:online` keeps, per online user, the latest
/// expiry of its entries. The scripts that add, remove, refresh and expire entries
/// PUBLISH the online/offline change themselves on `chat:presence`, inside the same
/// atomic step, so every node hears the changes in the order they happened.
/// A change is `"<1|0> <ms> <user>"`; with `cluster.busSecret` the node passes each script
/// the change's MAC (`BusSignature`), which the script puts in front of it, so presence
/// changes are signed like every other bus payload although Redis publishes them.
struct ClusterPresence: Sendable {
    static let channel = "chat:presence"
    static let onlineKey = "chat:online"

    /// A live user's latest expiry pushed forward; announced online when it was missing
    /// (Redis restarted empty). KEYS: online. ARGV: expiry, user, now, seal.
    static let refreshScript = """
        if redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2]) == 1 then
          redis.call('PUBLISH', 'chat:presence', ARGV[4] .. '1 ' .. ARGV[3] .. ' ' .. ARGV[2])
        end
        return 1
        """

    /// Users whose entries all expired (their node died): removed from `chat:online` and
    /// announced offline, each by exactly one node. The node read the candidates first and
    /// signed their announcements; each is checked again here, atomically.
    /// KEYS: online. ARGV: now, conns prefix, then user, seal pairs.
    static let expireScript = """
        local expired = 0
        for i = 3, #ARGV - 1, 2 do
          local user = ARGV[i]
          local score = redis.call('ZSCORE', KEYS[1], user)
          if score and tonumber(score) <= tonumber(ARGV[1]) then
            expired = expired + 1
            local conns = ARGV[2] .. user
            redis.call('ZREMRANGEBYSCORE', conns, '-inf', ARGV[1])
            local newest = redis.call('ZRANGE', conns, -1, -1, 'WITHSCORES')
            if #newest == 0 then
              redis.call('ZREM', KEYS[1], user)
              redis.call('PUBLISH', 'chat:presence', ARGV[i + 1] .. '0 ' .. ARGV[1] .. ' ' .. user)
            else
              redis.call('ZADD', KEYS[1], newest[2], user)
            end
          end
        end
        return expired
        """

    private let redis: ClusterRedis
    /// A user came online or went offline cluster-wide (called on the loop, in Redis's order).
    private let changed: @Sendable (_ user: UserID, _ online: Bool, _ at: Milliseconds) -> Void
    /// Every user with a live entry and the entry's expiry (ms), read whenever the presence
    /// subscription (re)starts: changes missed meanwhile are made up from it.
    private let snapshot: @Sendable ([(user: UserID, expiresAt: Milliseconds)]) -> Void

    init(redis: ClusterRedis, changed: @escaping @Sendable (UserID, Bool, Milliseconds) -> Void,
         snapshot: @escaping @Sendable ([(user: UserID, expiresAt: Milliseconds)]) -> Void) {
        self.redis = redis
        self.changed = changed
        self.snapshot = snapshot
    }

    /// What a presence script puts before the change it announces (`"<1|0> <ms> <user>"`):
    /// its MAC and a space, or nothing without a secret.
    func seal(online: Bool, at time: Milliseconds, user: UserID) -> String {
        guard let signature = redis.signature else { return "" }
        let change = Array("\(online ? 1 : 0) \(time) \(user)".utf8)
        return String(decoding: signature.mac(change, channel: Self.channel), as: UTF8.self) + " "
    }

    /// Pushes `user`'s latest expiry in `chat:online` forward on `publisher` (on the loop, in
    /// line with the refresh of its connection entries); back in the set after a Redis
    /// restart emptied it, the user is announced online again.
    func refresh(_ user: UserID, expiry: Milliseconds, now: Milliseconds, on publisher: RedisConnection) {
        publisher.send(["EVAL", Self.refreshScript, "1", Self.onlineKey, "\(expiry)", user, "\(now)",
                        seal(online: true, at: now, user: user)]) { _ in }
    }

    /// Announces offline the users whose entries all expired (their node died); every node
    /// runs it every few seconds, and each user is announced by one.
    func expire(now: Milliseconds) {
        redis.loop.execute { [self] in
            guard let publisher = redis.connectedPublisher else { return }
            // The candidates first, so that each offline announcement can be signed here;
            // the script checks each again, atomically, before it announces it.
            publisher.send(["ZRANGEBYSCORE", Self.onlineKey, "-inf", "\(now)", "LIMIT", "0", "1000"]) { [self] reply in
                guard case .array(let members) = reply, let publisher = redis.connectedPublisher else { return }
                var arguments = ["EVAL", Self.expireScript, "1", Self.onlineKey, "\(now)", ClusterConnections.key("")]
                for case .string(let member) in members {
                    let user = String(decoding: member, as: UTF8.self)
                    guard BusInputRules.isUserID(user) else { continue }
                    arguments += [user, seal(online: false, at: now, user: user)]
                }
                guard arguments.count > 6 else { return }
                publisher.send(arguments) { _ in }
            }
        }
    }

    /// A message off `chat:presence` (on the loop): checked, then handed on.
    func received(_ message: [UInt8]) {
        guard let payload = redis.unseal(message, channel: Self.channel) else { return }
        guard let change = Self.parse(payload) else {
            redis.rejectMalformed(Self.channel)
            return
        }
        changed(change.user, change.online, change.at)
    }

    /// Every user with a live entry, read when the presence subscription (re)starts (after
    /// it started, so that no change falls between the two).
    func readSnapshot() {
        guard let publisher = redis.connectedPublisher else { return }
        publisher.send(["ZRANGE", Self.onlineKey, "0", "-1", "WITHSCORES"]) { [self] reply in
            guard case .array(let parts) = reply else { return }
            var users: [(user: UserID, expiresAt: Milliseconds)] = []
            var index = 0
            while index + 1 < parts.count {
                // A member or score nobody honest wrote (`ZADD chat:online inf x`) is skipped.
                if let user = parts[index].text, BusInputRules.isUserID(user),
                   let expiresAt = parts[index + 1].text.flatMap(BusInputRules.milliseconds(fromScoreText:)) {
                    users.append((user, expiresAt))
                } else {
                    redis.rejectMalformed(Self.onlineKey)
                }
                index += 2
            }
            snapshot(users)
        }
    }

    /// One change off `chat:presence`: (user, online, at); nil when any part breaks
    /// `BusInputRules` (a user id a token could not carry, a time out of range).
    static func parse(_ payload: [UInt8]) -> (user: UserID, online: Bool, at: Milliseconds)? {
        let parts = payload.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 1, let at = BusInputRules.milliseconds(fromDecimal: parts[1]) else {
            return nil
        }
        let user = String(decoding: parts[2], as: UTF8.self)
        guard BusInputRules.isUserID(user) else { return nil }
        switch parts[0].first {
        case UInt8(ascii: "1"): return (user, true, at)
        case UInt8(ascii: "0"): return (user, false, at)
        default: return nil
        }
    }
}
