/// Base64 (RFC 4648), the one codec of the package: the standard alphabet with padding
/// (§4: the WebSocket handshake's keys) and the URL alphabet without padding (§5: JWT
/// segments, paging cursors).
public enum Base64 {
    /// Standard alphabet, padded with `=`.
    public static func encode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: standardAlphabet, padded: true)
    }

    /// Padded standard base64; nil on a character outside the alphabet or bad padding.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var padding = 0
        while padding < 2, padding < chars.count, chars[chars.count - 1 - padding] == UInt8(ascii: "=") { padding += 1 }
        return decode(chars[..<(chars.count - padding)], values: standardValues, canonical: false)
    }

    /// URL alphabet, unpadded.
    public static func encodeURL(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: urlAlphabet, padded: false)
    }

    /// Unpadded base64url; nil on a character outside the alphabet (padding included), an
    /// impossible length, or low bits set that no encoder writes (one encoding per byte string).
    public static func decodeURL(_ text: String) -> [UInt8]? {
        decode(Array(text.utf8)[...], values: urlValues, canonical: true)
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardValues = values(of: standardAlphabet)
    private static let urlValues = values(of: urlAlphabet)

    /// Each byte's 6-bit value in `alphabet`, 0xFF for bytes outside it.
    private static func values(of alphabet: [UInt8]) -> [UInt8] {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, char) in alphabet.enumerated() { values[Int(char)] = UInt8(value) }
        return values
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let rest = bytes.count - i
            let n = UInt32(bytes[i]) << 16 | UInt32(rest > 1 ? bytes[i + 1] : 0) << 8 | UInt32(rest > 2 ? bytes[i + 2] : 0)
            let chars = min(rest, 3) + 1
            for j in 0..<chars { out.append(alphabet[Int((n >> UInt32(18 - 6 * j)) & 0x3F)]) }
            if padded { for _ in chars..<4 { out.append(UInt8(ascii: "=")) } }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded characters; `canonical` also refuses set bits below the last whole byte.
    private static func decode(_ chars: ArraySlice<UInt8>, values: [UInt8], canonical: Bool) -> [UInt8]? {
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var group: UInt32 = 0
        var count = 0
        for char in chars {
            let value = values[Int(char)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                out.append(UInt8(group >> 16 & 0xFF))
                out.append(UInt8(group >> 8 & 0xFF))
                out.append(UInt8(group & 0xFF))
                group = 0
                count = 0
            }
        }
        switch count {
        case 2:
            if canonical, group & 0x0F != 0 { return nil }
            out.append(UInt8(group >> 4 & 0xFF))
        case 3:
            if canonical, group & 0x03 != 0 { return nil }
            out.append(UInt8(group >> 10 & 0xFF))
            out.append(UInt8(group >> 2 & 0xFF))
        default:
            break
        }
        return out
    }
}
