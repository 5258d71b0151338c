/// At most `limit` events per key in any window of `windowMs` (PROTOCOL.md §6:
/// live deliveries per open channel per second). Exact: each key keeps the
/// times of its last `limit` admitted events in a ring.
public struct SlidingWindowLimiter<Key: Hashable & Sendable>: Sendable {
    private struct Ring: Sendable {
        var times: [Milliseconds] = []
        var oldest = 0

        mutating func admit(now: Milliseconds, limit: Int, windowMs: Milliseconds) -> Bool {
            if times.count < limit {
                times.append(now)
            } else if now - times[oldest] >= windowMs {
                times[oldest] = now
                oldest = (oldest + 1) % limit
            } else {
                return false
            }
            return true
        }
    }

    public let limit: Int
    public let windowMs: Milliseconds
    private var rings: [Key: Ring] = [:]

    public init(limit: Int, windowMs: Milliseconds = 1000) {
        precondition(limit > 0 && windowMs > 0, "limit and window must be positive")
        self.limit = limit
        self.windowMs = windowMs
    }

    /// Admits one event of `key` at `now` when fewer than `limit` were admitted in the window ending now.
    public mutating func admit(_ key: Key, now: Milliseconds) -> Bool {
        rings[key, default: Ring()].admit(now: now, limit: limit, windowMs: windowMs)
    }

    /// Drops what is remembered of `key` (its channel is gone).
    public mutating func forget(_ key: Key) {
        rings[key] = nil
    }
}
