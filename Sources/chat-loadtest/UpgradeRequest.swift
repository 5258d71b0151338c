import WebSocket

/// The client's RFC 6455 opening handshake for `GET /v1/ws?token=…` (PROTOCOL.md §1).
struct UpgradeRequest {
    let bytes: [UInt8]
    /// The `Sec-WebSocket-Accept` the gateway must answer with.
    let expectedAccept: String

    init(address: GatewayAddress, token: String) {
        let key = Self.randomKey()
        var text = "GET \(address.path)?token=\(token) HTTP/1.1\r\nHost: \(address.hostHeader)\r\n"
        text += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: 13\r\n\r\n"
        bytes = Array(text.utf8)
        expectedAccept = WebSocketHandshake.acceptValue(forKey: key)
    }

    /// 16 random bytes, base64.
    static func randomKey() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var generator = SystemRandomNumberGenerator()
        let raw = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) } + [0, 0]
        var out: [UInt8] = []
        for i in stride(from: 0, to: 18, by: 3) {
            let n = UInt32(raw[i]) << 16 | UInt32(raw[i + 1]) << 8 | UInt32(raw[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
        }
        out[22] = UInt8(ascii: "=")
        out[23] = UInt8(ascii: "=")
        return String(decoding: out, as: UTF8.self)
    }
}
