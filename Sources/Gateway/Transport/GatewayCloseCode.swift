import WebSocket

/// The gateway's own close codes (PROTOCOL.md), in the 4000–4999 range RFC 6455 §7.4.2
/// leaves to applications.
extension CloseCode {
    /// The peer left more output unread than its bound allows (`OutputBound`).
    public static let slowConsumer = CloseCode(4000)
    /// The session's token reached its `exp`, or the token of an `auth` message had expired.
    public static let tokenExpired = CloseCode(4001)
    /// An admin deactivated the user.
    public static let userDeactivated = CloseCode(4002)
    /// The user is banned (moderation; no request bans anyone yet).
    public static let userBanned = CloseCode(4003)
    /// The token of an `auth` message was refused (missing, malformed, bad signature, bad `sub`).
    public static let unauthorized = CloseCode(4004)
    /// The user of an `auth` message already holds `limits.maxConnectionsPerUser` connections.
    public static let tooManyConnections = CloseCode(4005)
}
