import ChatCore

/// `cluster.busSecret`: every payload a node puts on a bus channel is sent as
/// `<HMAC-SHA256, 64 hex digits> <payload>`, the MAC taken over the channel name, a
/// newline and the payload (so a payload signed for one channel is refused on another);
/// a payload whose MAC does not match, compared in constant time, is dropped.
///
/// It keeps out whoever can PUBLISH without the secret; it does not stop a replay of a
/// payload once seen on the bus, nor guard Redis's keys (AUTH, ACLs and TLS do).
struct BusSignature: Sendable {
    private let authenticator: MessageAuthenticator
    static let macHexLength = 64

    init(secret: String) {
        authenticator = MessageAuthenticator(key: Array(secret.utf8))
    }

    /// The MAC of `payload` on `channel`, as 64 lowercase hex digits.
    func mac(_ payload: some Collection<UInt8>, channel: String) -> [UInt8] {
        var input = Array(channel.utf8)
        input.append(UInt8(ascii: "\n"))
        input.append(contentsOf: payload)
        return Self.hex(authenticator.mac(input))
    }

    /// `payload` with its MAC in front, ready to PUBLISH on `channel`.
    func signed(_ payload: [UInt8], channel: String) -> [UInt8] {
        mac(payload, channel: channel) + [UInt8(ascii: " ")] + payload
    }

    /// The payload of a signed message, or nil when its MAC is missing or wrong.
    func verified(_ message: [UInt8], channel: String) -> [UInt8]? {
        guard message.count > Self.macHexLength, message[Self.macHexLength] == UInt8(ascii: " ") else { return nil }
        let payload = Array(message[(Self.macHexLength + 1)...])
        let given = Array(message[..<Self.macHexLength])
        return MessageAuthenticator.equal(mac(payload, channel: channel), given) ? payload : nil
    }

    private static func hex(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }
}
