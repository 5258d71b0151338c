import COpenSSL

/// HMAC-SHA256 (RFC 2104) under one key, with OpenSSL's constant-time comparison.
public struct MessageAuthenticator: Sendable {
    private let key: [UInt8]

    public init(key: [UInt8]) {
        self.key = key
    }

    /// The 32-byte MAC of `message`; all zeros if OpenSSL could not compute it (it fails
    /// only without memory), which no honest MAC matches in practice.
    public func mac(_ message: some Collection<UInt8>) -> [UInt8] {
        let input = Array(message)
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
        guard ok, length == 32 else { return [UInt8](repeating: 0, count: 32) }
        return Array(digest[0..<32])
    }

    /// Whether `a` and `b` are equal, in time that depends only on their length.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}
