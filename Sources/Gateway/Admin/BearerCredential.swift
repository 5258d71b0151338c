import WebSocket

/// A secret presented as `Authorization: Bearer <secret>`, checked in constant time:
/// the comparison reads every byte of the longer of the two, whatever the first
/// mismatch, so response times do not tell an attacker how much of a guess was right.
struct BearerCredential: Sendable {
    private let secrets: [[UInt8]]

    /// Accepts any of `secrets` (the admin key, and an optional metrics key).
    init(_ secrets: [String]) {
        self.secrets = secrets.filter { !$0.isEmpty }.map { Array($0.utf8) }
    }

    func accepts(_ request: HTTPRequest) -> Bool {
        guard let header = request.header("Authorization") else { return false }
        let prefix = Array("Bearer ".utf8)
        let bytes = Array(header.utf8)
        guard bytes.count > prefix.count, bytes[..<prefix.count].elementsEqual(prefix) else { return false }
        let presented = bytes[prefix.count...]
        var accepted = false
        for secret in secrets where Self.constantTimeEqual(presented, secret) { accepted = true }
        return accepted
    }

    static func constantTimeEqual(_ a: some Collection<UInt8>, _ b: [UInt8]) -> Bool {
        let a = Array(a)
        var difference = UInt64(a.count ^ b.count)
        let length = max(a.count, b.count)
        for i in 0..<length {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= UInt64(x ^ y)
        }
        return difference == 0
    }
}
