/// An error of the gateway (PROTOCOL.md §11) or of the connection to it.
public struct ChatClientError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable, Hashable {
        case badRequest, unknownType, notLoggedIn, tokenExpired, uidNotFound, cannotBlockSelf, invalidLimit
        case tooManyIDs, invalidCursor, channelNotFound, notAMember, messageTooLong, rateLimited, forbidden, internalError
        /// §15: no such message, or one the caller cannot see; a deleted one; past 25 reaction kinds.
        case messageNotFound, messageDeleted, tooManyReactions
        /// §16: a send in a frozen channel by a member (only owners and moderators send there).
        case channelFrozen
        /// §16: a send sooner than the channel's `slowModeSeconds` after the member's last one;
        /// `retryAfterMs` says when the next is accepted. A channel rule to show the user, not
        /// a rate limit: `Options.retryRateLimited` does not wait it out.
        case slowMode
        /// A code this client does not know yet.
        case other(String)
        /// The upgrade was answered with an HTTP error (401, 403, 429, 503, …), `status` below;
        /// or the gateway refused the user at `auth` (`closeCode` 4002, 4003: status 403; 4005: 429).
        case handshakeRefused
        /// The gateway could not be reached, or the connection broke before the answer came.
        case connectionFailed
        /// `disconnect()` was called, or the client gave up (a refused token).
        case closed
        /// No answer within the request timeout.
        case timedOut

        public init(wire: String) {
            switch wire {
            case "ERR_BAD_REQUEST": self = .badRequest
            case "ERR_UNKNOWN_TYPE": self = .unknownType
            case "ERR_NOT_LOGGED_IN": self = .notLoggedIn
            case "ERR_TOKEN_EXPIRED": self = .tokenExpired
            case "ERR_UID_NOT_FOUND": self = .uidNotFound
            case "ERR_CANNOT_BLOCK_SELF": self = .cannotBlockSelf
            case "ERR_INVALID_LIMIT": self = .invalidLimit
            case "ERR_TOO_MANY_IDS": self = .tooManyIDs
            case "ERR_INVALID_CURSOR": self = .invalidCursor
            case "ERR_CHANNEL_NOT_FOUND": self = .channelNotFound
            case "ERR_NOT_A_MEMBER": self = .notAMember
            case "ERR_MESSAGE_TOO_LONG": self = .messageTooLong
            case "ERR_RATE_LIMITED": self = .rateLimited
            case "ERR_FORBIDDEN": self = .forbidden
            case "ERR_INTERNAL": self = .internalError
            case "ERR_MESSAGE_NOT_FOUND": self = .messageNotFound
            case "ERR_MESSAGE_DELETED": self = .messageDeleted
            case "ERR_TOO_MANY_REACTIONS": self = .tooManyReactions
            case "ERR_CHANNEL_FROZEN": self = .channelFrozen
            case "ERR_SLOW_MODE": self = .slowMode
            default: self = .other(wire)
            }
        }
    }

    public var code: Code
    public var message: String
    /// `ERR_RATE_LIMITED`, `ERR_SLOW_MODE`: when the request may be made again.
    public var retryAfterMs: Int?
    /// `.handshakeRefused`: the HTTP status (for a refusal at `auth`, the one the upgrade would have had).
    public var status: Int?
    /// A refusal at `auth` (PROTOCOL.md §1, §8): the close code (4001–4005).
    public var closeCode: Int?

    public init(_ code: Code, _ message: String, retryAfterMs: Int? = nil, status: Int? = nil, closeCode: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
        self.status = status
        self.closeCode = closeCode
    }

    /// A refusal of the user itself, whatever its token: banned app-wide (close 4003, §16),
    /// at `connect()` or ending a live connection.
    public var isBanned: Bool { code == .handshakeRefused && closeCode == 4003 }

    /// A refusal of the user itself: deactivated (close 4002).
    public var isDeactivated: Bool { code == .handshakeRefused && closeCode == 4002 }

    public var description: String {
        var text = "\(code): \(message)"
        if let status { text += " (HTTP \(status))" }
        if let closeCode { text += " (close \(closeCode))" }
        if let retryAfterMs { text += " (retry after \(retryAfterMs) ms)" }
        return text
    }
}
