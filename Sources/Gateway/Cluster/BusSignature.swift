import COpenSSL

/// `cluster.busSecret`: every payload a node puts on a bus channel is sent as
/// `<HMAC-SHA256, 64 hex digits> <payload>`, the MAC taken over the channel name, a
/// newline and the payload (so a payload signed for one channel is refused on another);
/// a payload whose MAC does not match, compared in constant time, is dropped.
///
/// It keeps out whoever can PUBLISH without the secret; it does not stop a replay of a
/// payload once seen on the bus, nor guard Redis's keys (AUTH, ACLs and TLS do).
struct BusSignature: Sendable {
    private let key: [UInt8]
    static let macHexLength = 64

    init(secret: String) {
        key = Array(secret.utf8)
    }

    /// The MAC of `payload` on `channel`, as 64 lowercase hex digits.
    func mac(_ payload: some Collection<UInt8>, channel: String) -> [UInt8] {
        var input = Array(channel.utf8)
        input.append(UInt8(ascii: "\n"))
        input.append(contentsOf: payload)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = key.withUnsafeBufferPointer { key in
            input.withUnsafeBufferPointer { input in
                digest.withUnsafeMutableBufferPointer { digest in
                    HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), input.baseAddress, input.count,
                         digest.baseAddress, &length) != nil
                }
            }
        }
        // HMAC fails only without memory; an all-zero MAC then matches nothing real.
        guard ok, length == 32 else { return [UInt8](repeating: UInt8(ascii: "0"), count: Self.macHexLength) }
        return Self.hex(digest[0..<32])
    }

    /// `payload` with its MAC in front, ready to PUBLISH on `channel`.
    func signed(_ payload: [UInt8], channel: String) -> [UInt8] {
        mac(payload, channel: channel) + [UInt8(ascii: " ")] + payload
    }

    /// The payload of a signed message, or nil when its MAC is missing or wrong.
    func verified(_ message: [UInt8], channel: String) -> [UInt8]? {
        guard message.count > Self.macHexLength, message[Self.macHexLength] == UInt8(ascii: " ") else { return nil }
        let payload = Array(message[(Self.macHexLength + 1)...])
        let expected = mac(payload, channel: channel)
        let equal = expected.withUnsafeBytes { expected in
            message.withUnsafeBytes { given in
                CRYPTO_memcmp(expected.baseAddress, given.baseAddress, Self.macHexLength) == 0
            }
        }
        return equal ? payload : nil
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
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
