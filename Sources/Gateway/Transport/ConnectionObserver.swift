import EventLoop
import Logging
import WebSocket

/// Logs connection lifecycle events, one JSON line each, and counts them.
struct ConnectionObserver: Sendable {
    var logger: Logger
    var metrics: GatewayMetrics

    func webSocketOpened(_ connection: SocketConnection, path: String, deflate: Bool, user: String?) {
        var metadata: Logger.Metadata = [
            "conn": .stringConvertible(connection.id), "path": "\(path)",
            "transport": "\(connection.isTLS ? "wss" : "ws")", "deflate": .stringConvertible(deflate),
        ]
        if let user { metadata["user"] = "\(user)" }
        logger.info("connection.open", metadata: metadata)
        metrics.handshake("accepted")
        metrics.connections(tls: connection.isTLS).increment()
    }

    func webSocketClosed(_ connection: SocketConnection, code: CloseCode?, user: String?) {
        var metadata: Logger.Metadata = ["conn": .stringConvertible(connection.id), "code": .stringConvertible(code?.rawValue ?? 1006)]
        if let user { metadata["user"] = "\(user)" }
        logger.info("connection.close", metadata: metadata)
        metrics.connections(tls: connection.isTLS).decrement()
    }

    /// The peer left more output unsent than its bound allows (`OutputBound`): closed, 4000 on a WebSocket.
    func slowConsumer(_ connection: SocketConnection, queuedBytes: Int, user: String?) {
        var metadata: Logger.Metadata = ["conn": .stringConvertible(connection.id), "queuedBytes": .stringConvertible(queuedBytes)]
        if let user { metadata["user"] = "\(user)" }
        logger.warning("connection.slow_consumer", metadata: metadata)
        metrics.slowConsumerCloses.increment()
    }

    /// A plain HTTP request answered (not a WebSocket upgrade, so not a handshake): every
    /// admin-API call is logged with its outcome (never its body or key) and counted; any
    /// other refusal (a 404, `/metrics` without its key) is logged as `http.rejected`.
    func httpAnswered(_ connection: SocketConnection, method: String, path: String, status: Int) {
        let metadata: Logger.Metadata = ["conn": .stringConvertible(connection.id), "method": "\(method)", "path": "\(path)",
                                         "status": .stringConvertible(status)]
        if path.hasPrefix("/v1/admin/") {
            logger.info("admin.request", metadata: metadata)
            metrics.adminRequest(status: status)
        } else if status >= 400 {
            logger.info("http.rejected", metadata: metadata)
        }
    }

    func handshakeRejected(_ connection: SocketConnection, status: Int, reason: String) {
        logger.info("handshake.rejected", metadata: [
            "conn": .stringConvertible(connection.id), "status": .stringConvertible(status), "reason": "\(reason)",
        ])
        metrics.handshake(String(status))
    }
}
