/// The gateway's per-connection request budget (docs/PROTOCOL.md "Bounds":
/// `limits.connectionRequestBurst` at once, refilled at `limits.connectionRequestsPerSecond`)
/// kept on the client's side, so a storm client paces its requests instead of drawing
/// `ERR_RATE_LIMITED`. A rate of 0 means no budget.
struct StormRequestBudget: Sendable {
    let perSecond: Double
    let burst: Double
    private var tokens: Double
    private var updatedAt: UInt64 = 0

    init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = Double(max(1, burst))
        tokens = self.burst
    }

    /// Takes one request's token now and returns 0, or returns the nanoseconds until one is due.
    mutating func take(now: UInt64) -> UInt64 {
        guard perSecond > 0 else { return 0 }
        if updatedAt != 0 && now > updatedAt {
            tokens = min(burst, tokens + Double(now - updatedAt) / 1e9 * perSecond)
        }
        updatedAt = now
        guard tokens < 1 else {
            tokens -= 1
            return 0
        }
        // A little past the moment the gateway's bucket refills, so both agree it did.
        return UInt64((1 - tokens) / perSecond * 1e9) + 2_000_000
    }
}
