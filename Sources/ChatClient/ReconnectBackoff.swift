/// How long to wait before reconnect attempt `n` (from 1): exponential from `base` up to
/// `maximum`, with full jitter (a random delay between half of that and all of it), so a
/// gateway restart does not see every client come back in the same instant.
public struct ReconnectBackoff: Sendable, Equatable {
    public var base: Duration
    public var maximum: Duration

    public init(base: Duration = .milliseconds(250), maximum: Duration = .seconds(30)) {
        self.base = base
        self.maximum = maximum
    }

    /// The delay before attempt `attempt`, with `unit` in 0…1 the jitter's draw.
    public func delay(attempt: Int, unit: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(base * (1 << exponent), maximum)
        return ceiling * (0.5 + 0.5 * min(max(unit, 0), 1))
    }
}
