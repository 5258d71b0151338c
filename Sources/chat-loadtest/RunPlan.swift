import EventLoop

/// What every connection of a run shares, fixed before the first connect.
struct RunPlan: Sendable {
    var address: GatewayAddress
    var tls: TLSContext?
    var channelID: String
    var members: Int
    var publishers: Int
    var textSize: Int
}
