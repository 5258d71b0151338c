/// What one connection may ask of the core (every request type, not only `message.send`):
/// `burst` requests at once, refilled at `ratePerSecond`, and at most `maxInFlight`
/// requests handed to the core and not yet answered. A connection over its budget is
/// answered `ERR_RATE_LIMITED` at once, without costing the core anything, so no one
/// client can fill the core's queue.
///
/// The rate is a single-key generic cell rate algorithm (see `TokenBucketLimiter`).
public struct RequestBudget: Sendable {
    public enum Decision: Equatable, Sendable {
        case admitted
        /// Over the rate; a request is admitted again after this many milliseconds.
        case limited(retryAfterMs: Int64)
        /// `maxInFlight` requests already wait for their answers.
        case tooManyInFlight
    }

    /// 0: no rate limit (benchmarks, trusted backends).
    public let ratePerSecond: Int
    public let burst: Int
    public let maxInFlight: Int
    public private(set) var inFlight = 0
    /// Nanoseconds between two tokens, and how far ahead of now the full-again time may be.
    private let interval: Int64
    private let tolerance: Int64
    /// When the bucket is full again (ns on the monotonic clock); 0: full.
    private var fullAt: Int64 = 0

    public init(ratePerSecond: Int, burst: Int, maxInFlight: Int) {
        self.ratePerSecond = max(0, ratePerSecond)
        self.burst = max(1, burst)
        self.maxInFlight = max(1, maxInFlight)
        interval = ratePerSecond > 0 ? 1_000_000_000 / Int64(ratePerSecond) : 0
        tolerance = Int64(self.burst - 1) * interval
    }

    /// Admits one request at `now` (monotonic milliseconds), counting it in flight.
    public mutating func admit(now: Milliseconds) -> Decision {
        guard inFlight < maxInFlight else { return .tooManyInFlight }
        if ratePerSecond > 0 {
            let t = now.multipliedReportingOverflow(by: 1_000_000).partialValue
            let full = max(fullAt, t)
            let ahead = full - t
            if ahead > tolerance {
                return .limited(retryAfterMs: (ahead - tolerance + 999_999) / 1_000_000)
            }
            fullAt = full + interval
        }
        inFlight += 1
        return .admitted
    }

    /// An admitted request was answered.
    public mutating func answered() {
        inFlight = max(0, inFlight - 1)
    }
}
