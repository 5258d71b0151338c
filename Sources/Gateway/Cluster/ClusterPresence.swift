import ChatCore
import EventLoop
import Redis

/// Presence across nodes (PROTOCOL.md §14: a user is online while it holds a live
/// connection on any node). The connection entries (`ClusterConnections`, expiring unless
/// their node refreshes them) decide; `{chat:online}` keeps, per online user, the latest
/// expiry of its entries. Every change is PUBLISHed on `chat:presence` by the script that
/// makes it, inside the same atomic step, so every node hears the changes in the order
/// they happened. The keys of this set share one hash slot (`{chat:online}`); a user's
/// entries are in the user's slot, so a change decided there (first or last entry) comes
/// here with its version and is applied only when newer than the user's last
/// (`{chat:online}:versions`, kept a minute after a user went offline: `…:gone`).
/// A change is `"<1|0> <ms> <user>"`; with `cluster.busSecret` the node passes each script
/// the change's MAC (`BusSignature`), which the script puts in front of it, so presence
/// changes are signed like every other bus payload although Redis publishes them.
struct ClusterPresence: Sendable {
    static let channel = "chat:presence"
    static let onlineKey = "{chat:online}"
    static let versionsKey = "{chat:online}:versions"
    static let goneKey = "{chat:online}:gone"
    /// How long a user's last version is kept after it went offline: far longer than a
    /// change can take from its user's slot to here.
    static let goneMilliseconds: Int64 = 60_000

    /// A live user's latest expiry pushed forward; announced online when it was missing
    /// (Redis restarted empty). KEYS: online. ARGV: expiry, user, now, seal.
    static let refreshScript = """
        if redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2]) == 1 then
          redis.call('PUBLISH', 'chat:presence', ARGV[4] .. '1 ' .. ARGV[3] .. ' ' .. ARGV[2])
        end
        return 1
        """

    /// A user's first entry added or last removed, applied when its version is newer than
    /// the last applied. KEYS: online, versions, gone. ARGV: 1|0, user, version, expiry, now,
    /// seal.
    static let announceScript = """
        local stored = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') or 0
        if tonumber(ARGV[3]) <= stored then return 0 end
        redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
        if ARGV[1] == '1' then
          redis.call('ZREM', KEYS[3], ARGV[2])
          redis.call('ZADD', KEYS[1], 'GT', ARGV[4], ARGV[2])
          redis.call('PUBLISH', 'chat:presence', ARGV[6] .. '1 ' .. ARGV[5] .. ' ' .. ARGV[2])
        else
          redis.call('ZADD', KEYS[3], ARGV[5], ARGV[2])
          if redis.call('ZREM', KEYS[1], ARGV[2]) == 1 then
            redis.call('PUBLISH', 'chat:presence', ARGV[6] .. '0 ' .. ARGV[5] .. ' ' .. ARGV[2])
          end
        end
        return 1
        """

    /// Users whose entries all expired (their node died): removed and announced offline,
    /// each by one node; a user with a live entry left keeps it as its expiry. The node read
    /// the candidates, then each one's newest entry and version in its own slot; each is
    /// checked again here (still expired, no newer change applied meanwhile; a version of 0
    /// means the user's slot has had no change for longer than its version is kept, so
    /// nothing newer can be on its way). Versions of users gone longer than
    /// `goneMilliseconds` are dropped.
    /// KEYS: online, versions, gone. ARGV: now, then user, newest (0: none), version, seal.
    static let expireScript = """
        local expired = 0
        for i = 2, #ARGV - 3, 4 do
          local user = ARGV[i]
          local score = redis.call('ZSCORE', KEYS[1], user)
          local stored = tonumber(redis.call('HGET', KEYS[2], user) or '0') or 0
          local version = tonumber(ARGV[i + 2])
          if score and tonumber(score) <= tonumber(ARGV[1]) and (version == 0 or version >= stored) then
            expired = expired + 1
            if ARGV[i + 1] == '0' then
              redis.call('ZREM', KEYS[1], user)
              redis.call('ZADD', KEYS[3], ARGV[1], user)
              redis.call('PUBLISH', 'chat:presence', ARGV[i + 3] .. '0 ' .. ARGV[1] .. ' ' .. user)
            else
              redis.call('ZADD', KEYS[1], ARGV[i + 1], user)
            end
          end
        end
        local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', tonumber(ARGV[1]) - \(goneMilliseconds), 'LIMIT', 0, 1000)
        for _, user in ipairs(gone) do
          redis.call('HDEL', KEYS[2], user)
          redis.call('ZREM', KEYS[3], user)
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

    /// Pushes `user`'s latest expiry in `chat:online` forward (on the loop, in line with the
    /// refresh of its connection entries); back in the set after a Redis restart emptied it,
    /// the user is announced online again.
    func refresh(_ user: UserID, expiry: Milliseconds, now: Milliseconds) {
        redis.send(["EVAL", Self.refreshScript, "1", Self.onlineKey, "\(expiry)", user, "\(now)",
                    seal(online: true, at: now, user: user)], key: Self.onlineKey)
    }

    /// A user's first entry added (`online`) or last removed, decided in the user's slot
    /// with `version`: applied and announced unless a newer change of the user was.
    func announce(online: Bool, user: UserID, version: Int64, expiry: Milliseconds, now: Milliseconds) {
        redis.loop.execute { [self] in
            redis.send(["EVAL", Self.announceScript, "3", Self.onlineKey, Self.versionsKey, Self.goneKey,
                        online ? "1" : "0", user, "\(version)", "\(expiry)", "\(now)",
                        seal(online: online, at: now, user: user)], key: Self.onlineKey)
        }
    }

    /// Announces offline the users whose entries all expired (their node died); every node
    /// runs it every few seconds, and each user is announced by one.
    func expire(now: Milliseconds) {
        redis.loop.execute { [self] in
            guard redis.canSend else { return }
            // The candidates first, then each one's newest entry in its own slot, so that each
            // offline announcement can be signed here; the script checks each again.
            redis.send(["ZRANGEBYSCORE", Self.onlineKey, "-inf", "\(now)", "LIMIT", "0", "1000"], key: Self.onlineKey) { [self] reply in
                guard case .array(let members) = reply else { return }
                let users = members.compactMap { member -> UserID? in
                    guard let user = member.text, BusInputRules.isUserID(user) else { return nil }
                    return user
                }
                guard !users.isEmpty else { return }
                var newest: [UserID: (expiry: Int64, version: Int64)] = [:]
                var answered = 0
                for user in users {
                    redis.send(["EVAL", ClusterConnections.newestScript, "2", ClusterConnections.key(user),
                                ClusterConnections.versionKey(user), "\(now)"], key: ClusterConnections.key(user)) { [self] reply in
                        if case .array(let parts) = reply, parts.count == 2,
                           case .integer(let expiry) = parts[0], case .integer(let version) = parts[1] {
                            newest[user] = (expiry, version)
                        }
                        answered += 1
                        guard answered == users.count else { return }
                        var arguments = ["EVAL", Self.expireScript, "3", Self.onlineKey, Self.versionsKey, Self.goneKey, "\(now)"]
                        for user in users {
                            guard let (expiry, version) = newest[user] else { continue }
                            arguments += [user, "\(expiry)", "\(version)", seal(online: false, at: now, user: user)]
                        }
                        redis.send(arguments, key: Self.onlineKey)
                    }
                }
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
        redis.send(["ZRANGE", Self.onlineKey, "0", "-1", "WITHSCORES"], key: Self.onlineKey) { [self] reply in
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
