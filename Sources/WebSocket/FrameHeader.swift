/// The fixed part of a frame (RFC 6455 §5.2), everything before the payload.
public struct FrameHeader: Equatable, Sendable {
    public var fin: Bool
    public var rsv1: Bool
    public var rsv2: Bool
    public var rsv3: Bool
    public var opcode: Opcode
    /// The masking key in wire order, or nil for an unmasked frame.
    public var maskKey: MaskKey?
    public var payloadLength: UInt64

    public init(
        fin: Bool = true, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false,
        opcode: Opcode, maskKey: MaskKey? = nil, payloadLength: UInt64
    ) {
        self.fin = fin
        self.rsv1 = rsv1
        self.rsv2 = rsv2
        self.rsv3 = rsv3
        self.opcode = opcode
        self.maskKey = maskKey
        self.payloadLength = payloadLength
    }

    /// Bytes the header occupies on the wire.
    public var encodedLength: Int {
        let lengthBytes = payloadLength < 126 ? 0 : (payloadLength <= 0xFFFF ? 2 : 8)
        return 2 + lengthBytes + (maskKey == nil ? 0 : 4)
    }

    /// The largest header: 2 + 8 length bytes + 4 mask bytes.
    public static let maximumLength = 14
}
