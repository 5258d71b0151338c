import ChatCore

/// Presence across nodes (PROTOCOL.md §14: a user is online while it holds a live
/// connection on any node). The connection entries (`chat:conns:<user>`, expiring unless
/// their node refreshes them) decide; `chat:online` keeps, per online user, the latest
/// expiry of its entries. The scripts that add, remove, refresh and expire entries
/// PUBLISH the online/offline change themselves on `chat:presence`, inside the same
/// atomic step, so every node hears the changes in the order they happened.
/// A change is `"<1|0> <ms> <user>"`; with `cluster.busSecret` the node passes each script
/// the change's MAC (`BusSignature`), which the script puts in front of it, so presence
/// changes are signed like every other bus payload although Redis publishes them.
extension ClusterBus {
    static let presenceChannel = "chat:presence"
    static let onlineKey = "chat:online"

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

    /// A live user's latest expiry pushed forward; announced online when it was missing
    /// (Redis restarted empty). KEYS: online. ARGV: expiry, user, now, seal.
    static let refreshPresenceScript = """
        if redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2]) == 1 then
          redis.call('PUBLISH', 'chat:presence', ARGV[4] .. '1 ' .. ARGV[3] .. ' ' .. ARGV[2])
        end
        return 1
        """

    /// Users whose entries all expired (their node died): removed from `chat:online` and
    /// announced offline, each by exactly one node. The node read the candidates first and
    /// signed their announcements; each is checked again here, atomically.
    /// KEYS: online. ARGV: now, conns prefix, then user, seal pairs.
    static let expirePresenceScript = """
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

    /// One change off `chat:presence`: (user, online, at); nil when any part breaks
    /// `BusInputRules` (a user id a token could not carry, a time out of range).
    static func parsePresence(_ payload: [UInt8]) -> (user: UserID, online: Bool, at: Milliseconds)? {
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
