/// Streaming frame parser (RFC 6455 §5.2): bytes in, a header followed by
/// payload chunks out. It never buffers payload; only a partial header
/// (at most 14 bytes) is kept between calls, so an idle connection costs
/// a few bytes of parser state.
public struct FrameParser: Sendable {
    public enum Role: Sendable {
        /// Receives client frames: every frame must be masked.
        case server
        /// Receives server frames: no frame may be masked.
        case client
    }

    /// One step of parsing.
    public enum Step {
        /// Every input byte was consumed; call again with more bytes.
        case needMoreData
        /// A complete, checked header. Its payload follows as `.payload` chunks.
        case header(FrameHeader)
        /// The next chunk of the current frame's payload, still masked.
        /// `maskOffset` is the position of the chunk's first byte in the payload.
        case payload(UnsafeRawBufferPointer, maskOffset: Int)
        /// The current frame's payload is complete.
        case frameEnd
    }

    private enum State: Sendable {
        case header
        case payload(remaining: UInt64, offset: Int)
        case end
    }

    public let role: Role
    /// Frames announcing a longer payload are refused with 1009.
    public let maxPayloadLength: UInt64
    private var state: State = .header
    private var stash = HeaderStash()

    public init(role: Role, maxPayloadLength: UInt64) {
        self.role = role
        self.maxPayloadLength = maxPayloadLength
    }

    /// Whether the parser is between frames (no partial header or payload pending).
    public var isAtFrameBoundary: Bool {
        if case .header = state { return stash.count == 0 }
        return false
    }

    /// Parses from `input[index...]`, advancing `index` past what it consumed.
    public mutating func next(_ input: UnsafeRawBufferPointer, index: inout Int) throws(WebSocketError) -> Step {
        switch state {
        case .end:
            state = .header
            return .frameEnd
        case .payload(let remaining, let offset):
            let available = input.count - index
            guard available > 0 else { return .needMoreData }
            let take = Int(min(UInt64(available), remaining))
            let chunk = UnsafeRawBufferPointer(rebasing: input[index..<(index + take)])
            index += take
            let left = remaining - UInt64(take)
            state = left == 0 ? .end : .payload(remaining: left, offset: offset + take)
            return .payload(chunk, maskOffset: offset)
        case .header:
            return try parseHeader(input, index: &index)
        }
    }

    /// Right after `.header`: when the whole payload of that frame is in `input[index...]`,
    /// returns it (still masked) and moves past the frame, as if its `.payload` and
    /// `.frameEnd` steps had been taken; otherwise nil, and parsing goes on by steps.
    public mutating func takeWholePayload(_ input: UnsafeRawBufferPointer, index: inout Int) -> UnsafeRawBufferPointer? {
        switch state {
        case .end:
            state = .header
            return UnsafeRawBufferPointer(rebasing: input[index..<index])
        case .payload(let remaining, let offset):
            guard offset == 0, UInt64(input.count - index) >= remaining else { return nil }
            let end = index + Int(remaining)
            let payload = UnsafeRawBufferPointer(rebasing: input[index..<end])
            index = end
            state = .header
            return payload
        case .header:
            return nil
        }
    }

    private mutating func parseHeader(_ input: UnsafeRawBufferPointer, index: inout Int) throws(WebSocketError) -> Step {
        let header: FrameHeader
        if stash.count == 0 {
            let available = input.count - index
            guard available > 0 else { return .needMoreData }
            let view = UnsafeRawBufferPointer(rebasing: input[index...])
            switch try Self.decodeHeader(view, role: role, maxPayloadLength: maxPayloadLength) {
            case .incomplete:
                stash.append(view)
                index = input.count
                return .needMoreData
            case .complete(let decoded, let length):
                header = decoded
                index += length
            }
        } else {
            // Finish a header split across reads: top up the stash byte by byte
            // until it decodes, so nothing past the header is taken.
            while true {
                let result = try stash.withBytes { bytes throws(WebSocketError) in
                    try Self.decodeHeader(bytes, role: role, maxPayloadLength: maxPayloadLength)
                }
                if case .complete(let decoded, _) = result {
                    header = decoded
                    stash.count = 0
                    break
                }
                guard index < input.count else { return .needMoreData }
                stash.append(input[index])
                index += 1
            }
        }
        state = header.payloadLength == 0 ? .end : .payload(remaining: header.payloadLength, offset: 0)
        return .header(header)
    }

    private enum Decoded {
        case incomplete
        case complete(FrameHeader, length: Int)
    }

    private static func decodeHeader(
        _ bytes: UnsafeRawBufferPointer, role: Role, maxPayloadLength: UInt64
    ) throws(WebSocketError) -> Decoded {
        guard bytes.count >= 2 else { return .incomplete }
        let first = bytes[0]
        let second = bytes[1]
        guard let opcode = Opcode(rawValue: first & 0x0F) else {
            throw .protocolError("reserved opcode \(first & 0x0F)")
        }
        if first & 0x30 != 0 { throw .protocolError("RSV2/RSV3 set without an extension") }
        let fin = first & 0x80 != 0
        let masked = second & 0x80 != 0
        if opcode.isControl {
            if !fin { throw .protocolError("fragmented control frame") }
            if second & 0x7F > 125 { throw .protocolError("control frame payload over 125 bytes") }
        }
        switch role {
        case .server where !masked: throw .protocolError("client frame not masked")
        case .client where masked: throw .protocolError("server frame masked")
        default: break
        }
        var position = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard bytes.count >= 4 else { return .incomplete }
            length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            position = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return .incomplete }
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(bytes[i]) }
            position = 10
            if length & (1 << 63) != 0 { throw .protocolError("payload length with the high bit set") }
        }
        // Checked on the 64-bit value, before anything converts it to Int.
        if length > maxPayloadLength { throw WebSocketError(.messageTooBig, "frame of \(length) bytes over the limit") }
        var key: MaskKey?
        if masked {
            guard bytes.count >= position + 4 else { return .incomplete }
            key = MaskKey(bytes[position], bytes[position + 1], bytes[position + 2], bytes[position + 3])
            position += 4
        }
        let header = FrameHeader(
            fin: fin, rsv1: first & 0x40 != 0, rsv2: false, rsv3: false,
            opcode: opcode, maskKey: key, payloadLength: length)
        return .complete(header, length: position)
    }
}

/// Up to 14 bytes of a header that arrived split across reads.
struct HeaderStash: Sendable {
    private var storage: (UInt64, UInt64) = (0, 0)
    var count: Int = 0

    mutating func append(_ byte: UInt8) {
        withUnsafeMutableBytes(of: &storage) { $0[count] = byte }
        count += 1
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes { append(byte) }
    }

    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var copy = storage
        let n = count
        return try withUnsafeBytes(of: &copy) { raw throws(E) in
            try body(UnsafeRawBufferPointer(rebasing: raw[0..<n]))
        }
    }
}
