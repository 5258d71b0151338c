import ChatCore
import WebSocket

/// Why the gateway would not open a session for a token (PROTOCOL.md §1). The same refusal is
/// answered two ways: as the upgrade's HTTP error when the token came with the upgrade, or as a
/// close code when it came in an `auth` message after it (a browser sees the close code and its
/// reason, never a refused upgrade's status).
struct SessionRefusal: Error, Sendable, Equatable {
    enum Reason: Sendable, Equatable {
        /// Missing, malformed, badly signed, or a `sub` outside the allowed form.
        case invalidToken
        case tokenExpired
        case deactivated
        /// An app-wide plain ban (§16).
        case banned
        /// The user already holds `limits.maxConnectionsPerUser` live connections.
        case tooManyConnections
        /// The gateway could not place the session (no hub for the connection's loop).
        case unavailable
    }

    var reason: Reason
    /// The §11 code and message the client is told.
    var error: ChatError

    init(_ reason: Reason, _ error: ChatError) {
        self.reason = reason
        self.error = error
    }

    /// A refused token as `TokenAuthority.verify` reports it: expired, or invalid.
    init(token error: ChatError) {
        self.init(error.code == .tokenExpired ? .tokenExpired : .invalidToken, error)
    }

    /// The upgrade's status (§1 table).
    var httpStatus: Int {
        switch reason {
        case .invalidToken, .tokenExpired: 401
        case .deactivated, .banned: 403
        case .tooManyConnections: 429
        case .unavailable: 503
        }
    }

    /// The close code after an `auth` message (§1, §8).
    var closeCode: CloseCode {
        switch reason {
        case .invalidToken: .unauthorized
        case .tokenExpired: .tokenExpired
        case .deactivated: .userDeactivated
        case .banned: .userBanned
        case .tooManyConnections: .tooManyConnections
        case .unavailable: .internalError
        }
    }

    /// The close reason: the §11 code first, so a client can tell refusals apart by it, then
    /// the message (the frame keeps 123 bytes of it).
    var closeReason: String {
        error.code.rawValue + ": " + error.message
    }

    var httpResponse: HTTPResponse {
        .error(status: httpStatus, code: error.code.rawValue, message: error.message)
    }
}
