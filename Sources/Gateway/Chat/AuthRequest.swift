import ChatCore

/// A text message read for what the token-after-the-upgrade flow needs (PROTOCOL.md §1): an
/// `auth` request with its token (nil when the field is missing or not a string), another
/// request (only its `id`), or one that is not a request at all (the `ERR_BAD_REQUEST` it gets,
/// as for any request).
enum AuthRequest: Equatable {
    case auth(id: JSONValue, token: String?)
    case other(id: JSONValue)
    case malformed(id: JSONValue, error: ChatError)

    /// Field order and `params` as `RequestDecoder` reads them: the token beside `type`, or in `params`.
    static func read(_ bytes: [UInt8]) -> AuthRequest {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            return .malformed(id: .null, error: ChatError(.badRequest, "not JSON: \(error)"))
        }
        guard case .object(let object) = document else {
            return .malformed(id: .null, error: ChatError(.badRequest, "a request is a JSON object"))
        }
        var id = object["id"] ?? .null
        switch id {
        case .number, .string, .null: break
        default: id = .null
        }
        guard case .string(let type)? = object["type"] else {
            return .malformed(id: id, error: ChatError(.badRequest, "missing field type, or not a string"))
        }
        guard type == "auth" else { return .other(id: id) }
        let fields: JSONObject
        if case .object(let params)? = object["params"] { fields = params } else { fields = object }
        guard case .string(let token)? = fields["token"] else { return .auth(id: id, token: nil) }
        return .auth(id: id, token: token)
    }
}
