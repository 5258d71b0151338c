/// Keepalive of one WebSocket, sans-IO: after `idle` without a byte from the peer it asks for
/// a ping; when nothing arrives within `pongTimeout` of that ping it declares the peer dead
/// (any bytes count as an answer, not only the pong). Times are in the caller's unit: the
/// server's loop ticks (seconds), a client's milliseconds.
public struct WebSocketKeepalive: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case sendPing
        /// The ping went unanswered: close with this code and reason, and drop the connection.
        case close(code: CloseCode, reason: String)
    }

    public let idle: UInt64
    public let pongTimeout: UInt64
    /// When the unanswered ping was asked for.
    @usableFromInline var pingSentAt: UInt64?

    public init(idle: UInt64, pongTimeout: UInt64) {
        self.idle = idle
        self.pongTimeout = pongTimeout
    }

    /// Bytes arrived from the peer: it is alive, whatever they were.
    @inlinable
    public mutating func received() { pingSentAt = nil }

    /// What to do at `now`, when the peer's last bytes arrived at `lastReceivedAt`.
    public mutating func check(now: UInt64, lastReceivedAt: UInt64) -> Action? {
        if let sent = pingSentAt {
            return now >= sent + pongTimeout ? .close(code: .goingAway, reason: "ping timeout") : nil
        }
        guard now >= lastReceivedAt + idle else { return nil }
        pingSentAt = now
        return .sendPing
    }
}
