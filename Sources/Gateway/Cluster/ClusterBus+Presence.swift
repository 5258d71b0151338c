import ChatCore

/// Presence across nodes (PROTOCOL.md §14: a user is online while it holds a live
/// connection on any node). The connection entries (`chat:conns:<user>`, expiring unless
/// their node refreshes them) decide; `chat:online` keeps, per online user, the latest
/// expiry of its entries. The scripts that add, remove, refresh and expire entries
/// PUBLISH the online/offline change themselves on `chat:presence`, inside the same
/// atomic step, so every node hears the changes in the order they happened.
/// A change is `"<1|0> <ms> <user>"`.
extension ClusterBus {
    static let presenceChannel = "chat:presence"
    static let onlineKey = "chat:online"

    /// Admission under the cap: prunes the expired entries, counts, adds (returns 1, or 0 at
    /// the cap), and announces the user online when this is its first live entry.
    /// KEYS: conns, online. ARGV: now, cap, expiry, entry, ttl, user.
    static let admitAndAnnounceScript = """
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
        local before = redis.call('ZCARD', KEYS[1])
        if before >= tonumber(ARGV[2]) then return 0 end
        redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
        redis.call('PEXPIRE', KEYS[1], ARGV[5])
        redis.call('ZADD', KEYS[2], 'GT', ARGV[3], ARGV[6])
        if before == 0 then redis.call('PUBLISH', 'chat:presence', '1 ' .. ARGV[1] .. ' ' .. ARGV[6]) end
        return 1
        """

    /// A closed connection's entry removed; the user announced offline when it was its last
    /// live one. KEYS: conns, online. ARGV: entry, now, user.
    static let releaseAndAnnounceScript = """
        local removed = redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
        if removed == 1 and redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZREM', KEYS[2], ARGV[3]) == 1 then
          redis.call('PUBLISH', 'chat:presence', '0 ' .. ARGV[2] .. ' ' .. ARGV[3])
        end
        return removed
        """

    /// A live user's latest expiry pushed forward; announced online when it was missing
    /// (Redis restarted empty). KEYS: online. ARGV: expiry, user, now.
    static let refreshPresenceScript = """
        if redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2]) == 1 then
          redis.call('PUBLISH', 'chat:presence', '1 ' .. ARGV[3] .. ' ' .. ARGV[2])
        end
        return 1
        """

    /// Users whose entries all expired (their node died): removed from `chat:online` and
    /// announced offline, each by exactly one node. KEYS: online. ARGV: now, conns prefix.
    static let expirePresenceScript = """
        local users = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1000)
        for _, user in ipairs(users) do
          local conns = ARGV[2] .. user
          redis.call('ZREMRANGEBYSCORE', conns, '-inf', ARGV[1])
          local newest = redis.call('ZRANGE', conns, -1, -1, 'WITHSCORES')
          if #newest == 0 then
            redis.call('ZREM', KEYS[1], user)
            redis.call('PUBLISH', 'chat:presence', '0 ' .. ARGV[1] .. ' ' .. user)
          else
            redis.call('ZADD', KEYS[1], newest[2], user)
          end
        end
        return #users
        """

    /// One change off `chat:presence`: (user, online, at).
    static func parsePresence(_ payload: [UInt8]) -> (user: UserID, online: Bool, at: Milliseconds)? {
        let parts = payload.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let at = Int64(String(decoding: parts[1], as: UTF8.self)) else { return nil }
        switch parts[0].first {
        case UInt8(ascii: "1"): return (String(decoding: parts[2], as: UTF8.self), true, at)
        case UInt8(ascii: "0"): return (String(decoding: parts[2], as: UTF8.self), false, at)
        default: return nil
        }
    }
}
