import WebSocket

/// The gateway's own close codes (PROTOCOL.md), in the 4000–4999 range RFC 6455 §7.4.2
/// leaves to applications.
extension CloseCode {
    /// The peer left more output unread than its bound allows (`OutputBound`).
    public static let slowConsumer = CloseCode(4000)
    /// The session's token reached its `exp`.
    public static let tokenExpired = CloseCode(4001)
    /// An admin deactivated the user.
    public static let userDeactivated = CloseCode(4002)
}
