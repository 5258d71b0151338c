import EventLoop
import Logging
import WebSocket

/// Logs connection lifecycle events, one JSON line each.
struct ConnectionObserver: Sendable {
    var logger: Logger

    func webSocketOpened(_ connection: SocketConnection, path: String, deflate: Bool) {
        logger.info("connection.open", metadata: [
            "conn": "\(connection.id)", "path": "\(path)",
            "transport": "\(connection.isTLS ? "wss" : "ws")", "deflate": "\(deflate)",
        ])
    }

    func webSocketClosed(_ connection: SocketConnection, code: CloseCode?) {
        logger.info("connection.close", metadata: [
            "conn": "\(connection.id)", "code": "\(code?.rawValue ?? 1006)",
        ])
    }

    func handshakeRejected(_ connection: SocketConnection, status: Int, reason: String) {
        logger.info("handshake.rejected", metadata: [
            "conn": "\(connection.id)", "status": "\(status)", "reason": "\(reason)",
        ])
    }
}
