/// The RFC 6455 / RFC 7692 protocol state of one connection, sans-IO: bytes
/// from the peer go in through `receive`, messages and bytes to send come out
/// as events. It owns no socket, no queue and no clock.
public struct WebSocketConnection {
    public enum Role: Sendable {
        case server
        case client
    }

    public enum Event {
        /// A complete text message; its bytes are valid UTF-8.
        case text([UInt8])
        case binary([UInt8])
        /// A ping arrived; the pong is already queued as a `.send` before it.
        case ping([UInt8])
        case pong([UInt8])
        /// Bytes to write to the peer, in order.
        case send([UInt8])
        /// The close handshake finished (peer's close, or the answer to ours);
        /// flush pending `.send`s, then close the transport.
        case closed(code: CloseCode?, reason: String)
        /// The peer broke the protocol; a close frame with `error.code` is queued
        /// as a `.send`. Flush, then close the transport.
        case failed(WebSocketError)
    }

    public enum State: Sendable, Equatable {
        case open
        /// This side sent a close frame and waits for the peer's.
        case closeSent
        case closed
    }

    private struct PartialMessage {
        var opcode: Opcode
        var compressed: Bool
        var payload: [UInt8] = []
        var validator = UTF8Validator()
        var validatedCount = 0
        var wireBytes: UInt64 = 0
        /// With a `messageInflater`: the compressed message, handed to it at its end.
        var compressedBytes: [UInt8] = []
    }

    /// Inflates whole compressed messages in place of the connection (see `MessageInflater`);
    /// consulted only when the peer resets its compression context per message.
    public var messageInflater: (any MessageInflater)?

    /// `messageInflater` when it applies: the peer compresses every message from an empty context.
    private var activeMessageInflater: (any MessageInflater)? {
        inflater?.resetAfterMessage == true ? messageInflater : nil
    }

    public let role: Role
    public let maxMessageBytes: Int
    public let deflate: DeflateParameters?
    /// Messages shorter than this go out uncompressed even when deflate is on.
    public var compressionThreshold: Int

    public private(set) var state: State = .open
    private var parser: FrameParser
    private var frame: FrameHeader?
    private var message: PartialMessage?
    private var controlPayload: [UInt8] = []
    private var scratch: [UInt8] = []
    private var inflater: Inflater?
    private var deflater: Deflater?

    public init(role: Role, maxMessageBytes: Int, deflate: DeflateParameters? = nil, compressionThreshold: Int = 0) {
        self.role = role
        self.maxMessageBytes = maxMessageBytes
        self.deflate = deflate
        self.compressionThreshold = compressionThreshold
        self.parser = FrameParser(role: role == .server ? .server : .client, maxPayloadLength: UInt64(maxMessageBytes))
        if let deflate {
            let peerResets = role == .server ? deflate.clientNoContextTakeover : deflate.serverNoContextTakeover
            inflater = Inflater(resetAfterMessage: peerResets)
        }
    }

    // MARK: receiving

    /// Feeds bytes from the peer and appends what they cause to `events`.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, events: inout [Event]) {
        var index = 0
        while state != .closed {
            do {
                switch try parser.next(bytes, index: &index) {
                case .needMoreData:
                    return
                case .header(let header):
                    if message == nil, header.fin, !header.rsv1, header.opcode == .text || header.opcode == .binary,
                       let payload = parser.takeWholePayload(bytes, index: &index) {
                        try receiveWhole(header, payload, events: &events)
                    } else {
                        try begin(header)
                    }
                case .payload(let chunk, let offset):
                    try consume(chunk, maskOffset: offset)
                case .frameEnd:
                    try end(events: &events)
                }
            } catch {
                fail(error, events: &events)
                return
            }
        }
    }

    public mutating func receive(_ bytes: [UInt8], events: inout [Event]) {
        bytes.withUnsafeBytes { receive($0, events: &events) }
    }

    private mutating func begin(_ header: FrameHeader) throws(WebSocketError) {
        if header.rsv1 && (deflate == nil || header.opcode == .continuation || header.opcode.isControl) {
            throw .protocolError("RSV1 set without permessage-deflate on this frame")
        }
        switch header.opcode {
        case .text, .binary:
            if message != nil { throw .protocolError("new message inside a fragmented message") }
            message = PartialMessage(opcode: header.opcode, compressed: header.rsv1)
        case .continuation:
            if message == nil { throw .protocolError("continuation frame without a message") }
        case .close, .ping, .pong:
            controlPayload.removeAll(keepingCapacity: true)
        }
        if !header.opcode.isControl, let partial = message {
            let total = partial.wireBytes + header.payloadLength
            if total > UInt64(maxMessageBytes) {
                throw WebSocketError(.messageTooBig, "message over \(maxMessageBytes) bytes")
            }
            message?.wireBytes = total
        }
        frame = header
    }

    /// A whole unfragmented, uncompressed message in one buffer: unmasked straight into its
    /// array and validated at once, without the partial message a fragmented one builds up.
    /// Judged as `begin`, `consume` and `end` would judge it: the parser already refused a
    /// payload over `maxMessageBytes`, and nothing is pending that it could interrupt.
    private mutating func receiveWhole(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer,
                                       events: inout [Event]) throws(WebSocketError) {
        let count = payload.count
        var bytes: [UInt8] = []
        bytes.append(addingCapacity: count) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                guard let destination = buffer.baseAddress, let source = payload.baseAddress else { return }
                if let key = header.maskKey {
                    key.apply(from: source, to: UnsafeMutableRawPointer(destination), count: count)
                } else {
                    UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: count)
                }
                initialized = count
            }
        }
        if header.opcode == .text {
            guard bytes.withUnsafeBytes({ UTF8Validator.isValid($0) }) else {
                throw WebSocketError(.invalidPayload, "invalid UTF-8 in text message")
            }
        }
        guard state == .open else { return }
        events.append(header.opcode == .text ? .text(bytes) : .binary(bytes))
    }

    private mutating func consume(_ chunk: UnsafeRawBufferPointer, maskOffset: Int) throws(WebSocketError) {
        guard let header = frame else { return }
        if header.opcode.isControl {
            append(chunk, key: header.maskKey, offset: maskOffset, to: &controlPayload)
            return
        }
        guard var partial = message else { return }
        message = nil  // keep the payload uniquely referenced while it grows
        defer { message = partial }
        if partial.compressed && activeMessageInflater != nil {
            append(chunk, key: header.maskKey, offset: maskOffset, to: &partial.compressedBytes)
            guard partial.compressedBytes.count <= maxMessageBytes else {
                throw WebSocketError(.messageTooBig, "compressed message over \(maxMessageBytes) bytes")
            }
            return
        } else if partial.compressed {
            scratch.removeAll(keepingCapacity: true)
            append(chunk, key: header.maskKey, offset: maskOffset, to: &scratch)
            guard let inflater else { throw WebSocketError(.internalError, "no inflater") }
            try inflater.inflate(scratch, appendingTo: &partial.payload, limit: maxMessageBytes)
        } else {
            append(chunk, key: header.maskKey, offset: maskOffset, to: &partial.payload)
        }
        try validateNewText(&partial)
    }

    private func append(_ chunk: UnsafeRawBufferPointer, key: MaskKey?, offset: Int, to buffer: inout [UInt8]) {
        if let key {
            key.apply(chunk, offset: offset, appendingTo: &buffer)
        } else {
            buffer.append(contentsOf: chunk)
        }
    }

    private func validateNewText(_ partial: inout PartialMessage) throws(WebSocketError) {
        guard partial.opcode == .text, partial.validatedCount < partial.payload.count else { return }
        let from = partial.validatedCount
        let valid = partial.payload.withUnsafeBytes { bytes in
            partial.validator.validate(UnsafeRawBufferPointer(rebasing: bytes[from...]))
        }
        guard valid else { throw WebSocketError(.invalidPayload, "invalid UTF-8 in text message") }
        partial.validatedCount = partial.payload.count
    }

    private mutating func end(events: inout [Event]) throws(WebSocketError) {
        guard let header = frame else { return }
        frame = nil
        switch header.opcode {
        case .ping:
            if state == .open {
                events.append(.send(encodeFrame(.pong, payload: controlPayload)))
            }
            events.append(.ping(controlPayload))
        case .pong:
            events.append(.pong(controlPayload))
        case .close:
            try receivedClose(events: &events)
        case .text, .binary, .continuation:
            guard header.fin, var partial = message else { return }
            message = nil
            if partial.compressed, let inflater {
                if let messageInflater = activeMessageInflater {
                    let compressed = partial.compressedBytes
                    let limit = maxMessageBytes
                    partial.payload = try messageInflater.inflatedMessage(compressed) { () throws(WebSocketError) -> [UInt8] in
                        var plain: [UInt8] = []
                        try inflater.inflate(compressed, appendingTo: &plain, limit: limit)
                        try inflater.finishMessage(appendingTo: &plain, limit: limit)
                        return plain
                    }
                } else {
                    try inflater.finishMessage(appendingTo: &partial.payload, limit: maxMessageBytes)
                }
                try validateNewText(&partial)
            }
            if partial.opcode == .text && !partial.validator.isAtCharacterBoundary {
                throw WebSocketError(.invalidPayload, "text message ends inside a UTF-8 sequence")
            }
            guard state == .open else { return }
            events.append(partial.opcode == .text ? .text(partial.payload) : .binary(partial.payload))
        }
    }

    private mutating func receivedClose(events: inout [Event]) throws(WebSocketError) {
        var code: CloseCode?
        var reason = ""
        if controlPayload.count == 1 { throw .protocolError("close frame with a 1-byte payload") }
        if controlPayload.count >= 2 {
            let received = CloseCode(UInt16(controlPayload[0]) << 8 | UInt16(controlPayload[1]))
            guard received.isValidOnWire else { throw .protocolError("invalid close code \(received.rawValue)") }
            let reasonBytes = controlPayload[2...]
            guard reasonBytes.withUnsafeBytes({ UTF8Validator.isValid($0) }) else {
                throw WebSocketError(.invalidPayload, "close reason is not valid UTF-8")
            }
            code = received
            reason = String(decoding: reasonBytes, as: UTF8.self)
        }
        if state == .open {
            let reply = code.map { FrameWriter.closePayload(code: $0, reason: "") } ?? []
            events.append(.send(encodeFrame(.close, payload: reply)))
        }
        state = .closed
        events.append(.closed(code: code, reason: reason))
    }

    private mutating func fail(_ error: WebSocketError, events: inout [Event]) {
        if state == .open {
            events.append(.send(encodeFrame(.close, payload: FrameWriter.closePayload(code: error.code, reason: error.reason))))
        }
        state = .closed
        message = nil
        events.append(.failed(error))
    }

    // MARK: sending

    /// A text message framed for the wire (compressed when negotiated and worth it).
    public mutating func encodeText(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
        encodeMessage(.text, payload)
    }

    public mutating func encodeText(_ payload: [UInt8]) -> [UInt8] {
        payload.withUnsafeBytes { encodeMessage(.text, $0) }
    }

    public mutating func encodeBinary(_ payload: [UInt8]) -> [UInt8] {
        payload.withUnsafeBytes { encodeMessage(.binary, $0) }
    }

    public mutating func encodeMessage(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer) -> [UInt8] {
        if let deflate, payload.count >= compressionThreshold {
            let compressor = deflater ?? makeDeflater(deflate)
            deflater = compressor
            var compressed: [UInt8] = []
            compressed.reserveCapacity(payload.count / 2 + 16)
            if compressor.compress(payload, appendingTo: &compressed) {
                var out: [UInt8] = []
                FrameWriter.appendFrame(opcode: opcode, payload: compressed, rsv1: true, maskKey: outgoingMask(), to: &out)
                return out
            }
        }
        var out: [UInt8] = []
        FrameWriter.appendFrame(opcode: opcode, payload: payload, maskKey: outgoingMask(), to: &out)
        return out
    }

    /// The window bits this connection compresses a `count`-byte message with when that
    /// compression starts from an empty context (server_no_context_takeover): the frame is
    /// then the same for every such connection, so one `compressedTextFrame` serves them all.
    public func sharedCompressionWindowBits(payloadCount count: Int) -> Int? {
        guard role == .server, let deflate, deflate.serverNoContextTakeover, count >= compressionThreshold else { return nil }
        return deflate.serverMaxWindowBits
    }

    /// A server's compressed text frame for `payload` (RSV1, unmasked), from an empty context; nil if zlib failed.
    public static func compressedTextFrame(_ payload: [UInt8], windowBits: Int) -> [UInt8]? {
        var compressed: [UInt8] = []
        compressed.reserveCapacity(payload.count / 2 + 16)
        guard Deflater(windowBits: windowBits, resetAfterMessage: true).compress(payload, appendingTo: &compressed) else {
            return nil
        }
        var frame: [UInt8] = []
        FrameWriter.appendFrame(opcode: .text, payload: compressed, rsv1: true, to: &frame)
        return frame
    }

    private func makeDeflater(_ parameters: DeflateParameters) -> Deflater {
        switch role {
        case .server:
            return Deflater(windowBits: parameters.serverMaxWindowBits, resetAfterMessage: parameters.serverNoContextTakeover)
        case .client:
            return Deflater(windowBits: parameters.clientMaxWindowBits, resetAfterMessage: parameters.clientNoContextTakeover)
        }
    }

    public mutating func encodePing(_ payload: [UInt8] = []) -> [UInt8] {
        encodeFrame(.ping, payload: Array(payload.prefix(125)))
    }

    /// Starts the close handshake; nil when a close was already sent or received.
    public mutating func encodeClose(code: CloseCode, reason: String = "") -> [UInt8]? {
        guard state == .open else { return nil }
        state = .closeSent
        return encodeFrame(.close, payload: FrameWriter.closePayload(code: code, reason: reason))
    }

    private func encodeFrame(_ opcode: Opcode, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        FrameWriter.appendFrame(opcode: opcode, payload: payload, maskKey: outgoingMask(), to: &out)
        return out
    }

    private func outgoingMask() -> MaskKey? {
        role == .client ? MaskKey.random() : nil
    }
}
