import EventLoop
import Logging
import WebSocket

/// Logs connection lifecycle events, one JSON line each.
struct ConnectionObserver: Sendable {
    var logger: Logger

    func webSocketOpened(_ connection: SocketConnection, path: String, deflate: Bool, user: String?) {
        var metadata: Logger.Metadata = [
            "conn": "\(connection.id)", "path": "\(path)",
            "transport": "\(connection.isTLS ? "wss" : "ws")", "deflate": "\(deflate)",
        ]
        if let user { metadata["user"] = "\(user)" }
        logger.info("connection.open", metadata: metadata)
    }

    func webSocketClosed(_ connection: SocketConnection, code: CloseCode?, user: String?) {
        var metadata: Logger.Metadata = ["conn": "\(connection.id)", "code": "\(code?.rawValue ?? 1006)"]
        if let user { metadata["user"] = "\(user)" }
        logger.info("connection.close", metadata: metadata)
    }

    func handshakeRejected(_ connection: SocketConnection, status: Int, reason: String) {
        logger.info("handshake.rejected", metadata: [
            "conn": "\(connection.id)", "status": "\(status)", "reason": "\(reason)",
        ])
    }
}
