import ChatCore
import WebSocket

/// The gateway's HTTP errors (PROTOCOL.md §1): a JSON body `{"error":{"code","message"}}`.
extension HTTPResponse {
    static func error(status: Int, code: String, message: String,
                      headers: [(name: String, value: String)] = []) -> HTTPResponse {
        json(status: status, "{\"error\":{\"code\":\(JSONString.quote(code)),\"message\":\(JSONString.quote(message))}}",
             headers: headers)
    }

    /// A refused WebSocket upgrade: ERR_BAD_REQUEST with the handshake's reason, plus the
    /// headers RFC 6455 has the refusal carry.
    static func refusedUpgrade(_ rejection: WebSocketHandshake.Rejection) -> HTTPResponse {
        error(status: rejection.status, code: ErrorCode.badRequest.rawValue, message: rejection.reason,
              headers: rejection.sortedHeaders)
    }
}
