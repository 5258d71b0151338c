/// A Redis reply as a value (RESP2, as `RESPReader` reads it).
public enum RedisReply: Sendable, Equatable {
    case string([UInt8])
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    case null
    case error(String)
    /// The connection went away (or gave up waiting) before the reply came.
    case disconnected

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
