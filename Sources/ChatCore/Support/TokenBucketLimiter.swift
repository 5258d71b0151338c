/// One token bucket per key (PROTOCOL.md §6: a user's messages across all its
/// connections): `burst` tokens, refilled continuously at `ratePerSecond`.
///
/// Kept as the generic cell rate algorithm: per key only the time at which its
/// bucket is full again, so a refill is arithmetic, fractional refills are exact
/// and an idle key costs nothing (full buckets are forgotten).
public struct TokenBucketLimiter<Key: Hashable & Sendable>: Sendable {
    public enum Decision: Equatable, Sendable {
        case admitted
        /// Rejected; a token is available again after this many milliseconds.
        case limited(retryAfterMs: Int64)
    }

    public let ratePerSecond: Int
    public let burst: Int
    /// Nanoseconds a token takes to refill.
    private let interval: Int64
    /// How far ahead of now the full-again time may be while a token is left.
    private let tolerance: Int64
    /// Per key: when its bucket is full again (ns on the clock's scale); absent means full.
    private var fullAt: [Key: Int64] = [:]
    private var pruneThreshold = 1024

    public init(ratePerSecond: Int, burst: Int) {
        precondition(ratePerSecond > 0 && burst > 0, "rate and burst must be positive")
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        interval = 1_000_000_000 / Int64(ratePerSecond)
        tolerance = Int64(burst - 1) * interval
    }

    /// Takes one token of `key` at `now`, or says when one will be there.
    public mutating func take(_ key: Key, now: Milliseconds) -> Decision {
        let t = now * 1_000_000
        let index = fullAt.index(forKey: key)
        let full = max(index.map { fullAt.values[$0] } ?? t, t)
        let ahead = full - t
        if ahead > tolerance {
            let wait = ahead - tolerance
            return .limited(retryAfterMs: (wait + 999_999) / 1_000_000)
        }
        if let index {
            fullAt.values[index] = full + interval
        } else {
            fullAt[key] = full + interval
            if fullAt.count > pruneThreshold { forgetFullBuckets(at: t) }
        }
        return .admitted
    }

    /// Whole tokens `key` holds at `now` (for tests and diagnostics).
    public func tokens(_ key: Key, now: Milliseconds) -> Int {
        let t = now * 1_000_000
        guard let full = fullAt[key], full > t else { return burst }
        return max(0, Int((Int64(burst) * interval - (full - t)) / interval))
    }

    /// Keys currently remembered (buckets not yet full again).
    public var trackedKeys: Int { fullAt.count }

    private mutating func forgetFullBuckets(at t: Int64) {
        fullAt = fullAt.filter { $0.value > t }
        pruneThreshold = max(1024, fullAt.count * 2)
    }
}
