import WebSocket

/// What runs on top of an upgraded connection: a chat session (`ChatSession`, after
/// `AwaitingAuthSession` when the token comes as the first message) or the echo endpoint.
/// Every call happens on the connection's event loop.
protocol WebSocketApplication: AnyObject {
    func webSocketDidOpen(_ socket: WebSocketChannel)
    func webSocket(_ socket: WebSocketChannel, didReceiveText bytes: [UInt8])
    func webSocket(_ socket: WebSocketChannel, didReceiveBinary bytes: [UInt8])
    func webSocketDidClose(_ socket: WebSocketChannel)
    /// Once a second, from the loop's sweep.
    func webSocketTick(_ socket: WebSocketChannel)
    /// The upgrade was granted but the client had already gone.
    func webSocketAbandoned()
    /// The user on this connection, for log lines.
    var userForLogs: String? { get }
}

extension WebSocketApplication {
    func webSocketDidOpen(_ socket: WebSocketChannel) {}
    func webSocketTick(_ socket: WebSocketChannel) {}
    func webSocketAbandoned() {}
    var userForLogs: String? { nil }
}

/// `/v1/echo`: sends every message back as it came (Autobahn conformance).
final class EchoApplication: WebSocketApplication {
    func webSocket(_ socket: WebSocketChannel, didReceiveText bytes: [UInt8]) {
        socket.send(text: bytes)
    }

    func webSocket(_ socket: WebSocketChannel, didReceiveBinary bytes: [UInt8]) {
        socket.send(binary: bytes)
    }

    func webSocketDidClose(_ socket: WebSocketChannel) {}
}
