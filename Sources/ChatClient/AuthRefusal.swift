/// What the gateway's close of a connection still waiting for its `auth` answer means
/// (PROTOCOL.md §1, §8): the error a refused upgrade would have given, so an app (and the
/// client's own retry rules) handle both the same way. A live connection closed with 4002
/// (deactivated) or 4003 (banned app-wide, §16) ends the client with the same error.
enum AuthRefusal {
    static func error(closeCode: Int?, reason: String) -> ChatClientError {
        let message = reason.isEmpty ? "closed before auth was answered" : reason
        switch closeCode {
        case 4004?: return ChatClientError(.notLoggedIn, message, closeCode: 4004)
        case 4001?: return ChatClientError(.tokenExpired, message, closeCode: 4001)
        case 4002?: return ChatClientError(.handshakeRefused, message, status: 403, closeCode: 4002)
        case 4003?: return ChatClientError(.handshakeRefused, message, status: 403, closeCode: 4003)
        case 4005?: return ChatClientError(.handshakeRefused, message, status: 429, closeCode: 4005)
        case let code?: return ChatClientError(.connectionFailed, "closed (\(code)) before auth was answered: \(message)", closeCode: code)
        case nil: return ChatClientError(.connectionFailed, "the connection was lost before auth was answered")
        }
    }
}
