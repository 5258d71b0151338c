import CHiredis

/// A Redis reply as a value (hiredis's `redisReply` tree, copied out before hiredis frees it).
public enum RedisReply: Sendable, Equatable {
    case string([UInt8])
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    case null
    case error(String)
    /// The connection went away before the reply came.
    case disconnected

    init(_ reply: UnsafePointer<redisReply>?) {
        guard let reply = reply?.pointee else {
            self = .disconnected
            return
        }
        switch reply.type {
        case REDIS_REPLY_STRING: self = .string(Self.bytes(reply))
        case REDIS_REPLY_STATUS: self = .status(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_INTEGER: self = .integer(Int64(reply.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(reply.elements)
            for index in 0..<reply.elements { elements.append(RedisReply(UnsafePointer(reply.element[index]))) }
            self = .array(elements)
        default: self = .null
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let str = reply.str, reply.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: str, count: reply.len))
    }

    /// The text of a string or status reply.
    public var text: String? {
        switch self {
        case .string(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let text): text
        default: nil
        }
    }

    public var isFailure: Bool {
        switch self {
        case .error, .disconnected: true
        default: false
        }
    }
}
