/// PROTOCOL.md §11 error codes.
public enum ErrorCode: String, Sendable, Equatable {
    case badRequest = "ERR_BAD_REQUEST"
    case unknownType = "ERR_UNKNOWN_TYPE"
    case notLoggedIn = "ERR_NOT_LOGGED_IN"
    case tokenExpired = "ERR_TOKEN_EXPIRED"
    case userNotFound = "ERR_UID_NOT_FOUND"
    case cannotBlockSelf = "ERR_CANNOT_BLOCK_SELF"
    case invalidLimit = "ERR_INVALID_LIMIT"
    case tooManyIDs = "ERR_TOO_MANY_IDS"
    case invalidCursor = "ERR_INVALID_CURSOR"
    case channelNotFound = "ERR_CHANNEL_NOT_FOUND"
    case notAMember = "ERR_NOT_A_MEMBER"
    case messageTooLong = "ERR_MESSAGE_TOO_LONG"
    case rateLimited = "ERR_RATE_LIMITED"
    case forbidden = "ERR_FORBIDDEN"
    case internalError = "ERR_INTERNAL"
    case messageNotFound = "ERR_MESSAGE_NOT_FOUND"
    case messageDeleted = "ERR_MESSAGE_DELETED"
    case tooManyReactions = "ERR_TOO_MANY_REACTIONS"
    case channelFrozen = "ERR_CHANNEL_FROZEN"
    case slowMode = "ERR_SLOW_MODE"
}

/// A request that failed, as sent in an `error` reply.
public struct ChatError: Error, Equatable, Sendable {
    public var code: ErrorCode
    public var message: String
    public var retryAfterMs: Int64?

    public init(_ code: ErrorCode, _ message: String, retryAfterMs: Int64? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }
}
