/// Makes and opens the opaque paging cursors (`next`): the fields joined by
/// `\u{1F}`, base64url-encoded, with a SipHash tag keyed by a server secret.
/// A cursor the gateway did not issue, or an edited one, fails to open.
public struct CursorSealer: Sendable {
    private let key: SipHash

    /// Derives the key from a server secret (the JWT secret).
    public init(secret: String) {
        let bytes = Array(secret.utf8)
        let a = SipHash(k0: 0x0706050403020100, k1: 0x0F0E0D0C0B0A0908).mac(bytes)
        let b = SipHash(k0: 0x1716151413121110, k1: 0x1F1E1D1C1B1A1918).mac(bytes)
        key = SipHash(k0: a, k1: b)
    }

    public func seal(_ fields: [String]) -> String {
        let payload = Array(fields.joined(separator: "\u{1F}").utf8)
        var tag = key.mac(payload)
        let tagBytes = withUnsafeBytes(of: &tag) { Array($0) }
        return Base64URL.encode(payload) + "." + Base64URL.encode(tagBytes)
    }

    /// The fields, or ERR_INVALID_CURSOR.
    public func open(_ cursor: String, fieldCount: Int) throws(ChatError) -> [String] {
        let invalid = ChatError(.invalidCursor, "cursor is not one this gateway issued")
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64URL.decode(String(parts[0])),
              let tagBytes = Base64URL.decode(String(parts[1])), tagBytes.count == 8 else { throw invalid }
        var expected = key.mac(payload)
        guard withUnsafeBytes(of: &expected, { Array($0) }) == tagBytes,
              let text = String(validating: payload, as: UTF8.self) else { throw invalid }
        let fields = text.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == fieldCount else { throw invalid }
        return fields
    }
}

/// Unpadded base64url (RFC 4648 §5).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let chunk = Array(bytes[i..<min(i + 3, bytes.count)]) + [0, 0]
            let n = UInt32(chunk[0]) << 16 | UInt32(chunk[1]) << 8 | UInt32(chunk[2])
            let chars = min(bytes.count - i, 3) + 1
            for j in 0..<chars { out.append(alphabet[Int((n >> UInt32(18 - 6 * j)) & 0x3F)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt32] = []
        for c in text.utf8 {
            guard let index = alphabet.firstIndex(of: c) else { return nil }
            values.append(UInt32(index))
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < values.count {
            let group = Array(values[i..<min(i + 4, values.count)])
            var n: UInt32 = 0
            for j in 0..<4 { n = n << 6 | (j < group.count ? group[j] : 0) }
            for j in 0..<(group.count - 1) { out.append(UInt8((n >> UInt32(16 - 8 * j)) & 0xFF)) }
            i += 4
        }
        // One encoding per byte string: unused low bits of the last character must be zero.
        return encode(out) == text ? out : nil
    }
}
