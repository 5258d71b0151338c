/// Writes frames (RFC 6455 §5.2). Servers send unmasked frames; clients pass a key.
public enum FrameWriter {
    /// Appends the header for `header` to `buffer`.
    public static func appendHeader(_ header: FrameHeader, to buffer: inout [UInt8]) {
        var first: UInt8 = header.opcode.rawValue
        if header.fin { first |= 0x80 }
        if header.rsv1 { first |= 0x40 }
        if header.rsv2 { first |= 0x20 }
        if header.rsv3 { first |= 0x10 }
        let maskBit: UInt8 = header.maskKey == nil ? 0 : 0x80
        buffer.append(first)
        let length = header.payloadLength
        if length < 126 {
            buffer.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            buffer.append(maskBit | 126)
            buffer.append(UInt8(truncatingIfNeeded: length >> 8))
            buffer.append(UInt8(truncatingIfNeeded: length))
        } else {
            buffer.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
            }
        }
        if let key = header.maskKey {
            buffer.append(key.bytes.0)
            buffer.append(key.bytes.1)
            buffer.append(key.bytes.2)
            buffer.append(key.bytes.3)
        }
    }

    /// Appends a whole frame carrying `payload`, masked with `maskKey` when given.
    public static func appendFrame(
        opcode: Opcode, payload: UnsafeRawBufferPointer, fin: Bool = true, rsv1: Bool = false,
        maskKey: MaskKey? = nil, to buffer: inout [UInt8]
    ) {
        let header = FrameHeader(fin: fin, rsv1: rsv1, opcode: opcode, maskKey: maskKey, payloadLength: UInt64(payload.count))
        buffer.reserveCapacity(buffer.count + header.encodedLength + payload.count)
        appendHeader(header, to: &buffer)
        if let maskKey {
            maskKey.apply(payload, offset: 0, appendingTo: &buffer)
        } else {
            buffer.append(contentsOf: payload)
        }
    }

    public static func appendFrame(
        opcode: Opcode, payload: [UInt8], fin: Bool = true, rsv1: Bool = false,
        maskKey: MaskKey? = nil, to buffer: inout [UInt8]
    ) {
        payload.withUnsafeBytes {
            appendFrame(opcode: opcode, payload: $0, fin: fin, rsv1: rsv1, maskKey: maskKey, to: &buffer)
        }
    }

    /// A whole frame as a new array.
    public static func frame(opcode: Opcode, payload: [UInt8], fin: Bool = true, rsv1: Bool = false, maskKey: MaskKey? = nil) -> [UInt8] {
        var buffer: [UInt8] = []
        appendFrame(opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, maskKey: maskKey, to: &buffer)
        return buffer
    }

    /// The payload of a close frame: the code in network order, then the reason,
    /// cut at a character boundary so the payload stays within 125 bytes.
    public static func closePayload(code: CloseCode, reason: String) -> [UInt8] {
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var reasonBytes = 0
        for scalar in reason.unicodeScalars {
            let width = UTF8.width(scalar)
            if reasonBytes + width > 123 { break }
            reasonBytes += width
        }
        payload.append(contentsOf: reason.utf8.prefix(reasonBytes))
        return payload
    }
}
