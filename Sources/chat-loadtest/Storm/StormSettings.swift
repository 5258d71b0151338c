/// The knobs of a `storm` run, validated by its command.
struct StormSettings: Sendable {
    var clients: Int
    var channels: Int
    var publishers: Int
    /// Published while every client is connected (so each has a last seq before the drop).
    var liveMessages: Int
    /// Published while the clients are away.
    var awayMessages: Int
    var textSize: Int
    /// First connects in progress at once.
    var connectWindow: Int
    /// Reconnects in progress at once; 0: all at once.
    var reconnectWindow: Int
    /// Whether clients keep their TLS session and offer it when they reconnect.
    var resume: Bool
    /// The longest any phase may take.
    var phaseTimeout: Double
    /// Pause between phases, so one's aftermath in the gateway is not billed to the next.
    var settle: Double
    /// The gateway's `limits.connectionRequestsPerSecond` (0: off) and `limits.connectionRequestBurst`.
    var requestsPerSecond: Double
    var requestBurst: Int
    var pageLimit: Int
    var gatewayPID: Int32?
}
