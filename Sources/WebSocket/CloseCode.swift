/// Close status codes (RFC 6455 §7.4). An application adds its own private-use
/// codes (§7.4.2) as static members of an extension.
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = CloseCode(1000)
    public static let goingAway = CloseCode(1001)
    public static let protocolError = CloseCode(1002)
    public static let unsupportedData = CloseCode(1003)
    public static let invalidPayload = CloseCode(1007)
    public static let policyViolation = CloseCode(1008)
    public static let messageTooBig = CloseCode(1009)
    public static let internalError = CloseCode(1011)

    /// Whether a peer may send this code in a close frame. 1004–1006 and 1015
    /// are reserved for local use; 1016–2999 are unassigned.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}
