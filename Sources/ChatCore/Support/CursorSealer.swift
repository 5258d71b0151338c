import Base64Coding

/// Makes and opens the opaque paging cursors (`next`): the fields joined by
/// `\u{1F}`, base64url-encoded, with an HMAC-SHA256 tag (its first 16 bytes) under a key
/// derived from a server secret. A cursor the gateway did not issue, or an edited one,
/// fails to open; tags are compared in constant time.
public struct CursorSealer: Sendable {
    private let authenticator: MessageAuthenticator
    static let tagLength = 16

    /// Derives the key from a server secret (the JWT secret): HMAC(secret, a label of this
    /// use), so no other use of the secret shares the key.
    public init(secret: String) {
        let key = MessageAuthenticator(key: Array(secret.utf8)).mac(Array("chat-gateway paging cursors".utf8))
        authenticator = MessageAuthenticator(key: key)
    }

    public func seal(_ fields: [String]) -> String {
        let payload = Array(fields.joined(separator: "\u{1F}").utf8)
        return Base64.encodeURL(payload) + "." + Base64.encodeURL(tag(payload))
    }

    private func tag(_ payload: [UInt8]) -> [UInt8] {
        Array(authenticator.mac(payload).prefix(Self.tagLength))
    }

    /// The fields, or ERR_INVALID_CURSOR.
    public func open(_ cursor: String, fieldCount: Int) throws(ChatError) -> [String] {
        let invalid = ChatError(.invalidCursor, "cursor is not one this gateway issued")
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64.decodeURL(String(parts[0])),
              let tagBytes = Base64.decodeURL(String(parts[1])), tagBytes.count == Self.tagLength else { throw invalid }
        guard MessageAuthenticator.equal(tag(payload), tagBytes),
              let text = String(validating: payload, as: UTF8.self) else { throw invalid }
        let fields = text.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == fieldCount else { throw invalid }
        return fields
    }
}
