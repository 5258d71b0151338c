import WebSocket
import WebSocketDriver

/// What the gateway runs on top of an upgraded connection: a chat session (`ChatSession`, after
/// `AwaitingAuthSession` when the token comes as the first message) or the echo endpoint. To
/// the server role's calls it adds what the gateway's upgrade and logs need.
protocol WebSocketApplication: WebSocketServerApplication {
    /// The upgrade was granted but the client had already gone.
    func webSocketAbandoned()
    /// The user on this connection, for log lines.
    var userForLogs: String? { get }
}

extension WebSocketApplication {
    func webSocketAbandoned() {}
    var userForLogs: String? { nil }
}

extension WebSocketServerConnection {
    /// The user of the gateway application on this connection, for log lines.
    var userForLogs: String? { (application as? any WebSocketApplication)?.userForLogs }
}

/// `/v1/echo`: sends every message back as it came (Autobahn conformance).
final class EchoApplication: WebSocketApplication {
    func webSocket(_ socket: WebSocketServerConnection, didReceiveText bytes: [UInt8]) {
        socket.send(text: bytes)
    }

    func webSocket(_ socket: WebSocketServerConnection, didReceiveBinary bytes: [UInt8]) {
        socket.send(binary: bytes)
    }

    func webSocketDidClose(_ socket: WebSocketServerConnection) {}
}
