import Base64Coding
/// The client's RFC 6455 opening handshake: the GET request with a fresh
/// `Sec-WebSocket-Key`, and the `Sec-WebSocket-Accept` the server must answer with.
public struct WebSocketClientHandshake: Sendable {
    public let request: [UInt8]
    public let expectedAccept: String

    /// `target` is the request target, path and query (e.g. `/v1/ws?token=…`); `extensions`,
    /// when given, is sent as `Sec-WebSocket-Extensions`.
    public init(host: String, target: String, extensions: String? = nil) {
        var generator = SystemRandomNumberGenerator()
        let key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
        var text = "GET \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        text += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: 13\r\n"
        if let extensions { text += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        text += "\r\n"
        request = Array(text.utf8)
        expectedAccept = WebSocketHandshake.acceptValue(forKey: key)
    }
}
