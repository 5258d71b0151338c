// libFuzzer target: the receive side of a server-role WebSocketConnection
// (FrameParser plus the connection state machine: fragmentation, control
// frames between fragments, the close handshake from either side, limits,
// UTF-8, permessage-deflate).
//
// Input layout: byte 0 picks the split point of the wire bytes; byte 1 holds
// flags; bytes 2... are the wire bytes a client sent.
//   bit 0     the client asked for client_no_context_takeover
//   bit 1     the echo's compressor keeps its context (no server_no_context_takeover)
//   bits 2-4  the echo's server_max_window_bits, 9 + value % 7
//   bit 5     the server starts the close handshake before reading (state .closeSent)
//   bit 6     the echo's receiver inflates through chat-loadtest's InflateMemo, its
//             messageInflater (it applies with server_no_context_takeover)
//   bit 7     maxMessageBytes is 125 instead of 65536, so short inputs reach the limit
//
// Every input runs through four connections: without and with
// permessage-deflate, each fed in one read and in two reads, and:
// - the events must not depend on where the read boundary falls;
// - nothing follows .closed/.failed, and a closed connection ignores input;
// - every .send is a well-formed unmasked server frame: the pong answering the
//   ping that follows it, the close answering the peer's (same code), or the
//   close carrying the failure's code; in .closeSent nothing is sent and no
//   data message is delivered;
// - without deflate, when the connection did not fail, an independent model
//   (whole-buffer RFC 6455 §5 parsing, Swift's own UTF-8 validation) must find
//   every complete frame valid and expect exactly the events observed;
// - with deflate, every message received is sent back compressed to a
//   client-role connection, which must get the same payload.
// Build and run with `scripts/fuzz FrameParserFuzz` (which compiles in
// Sources/chat-loadtest/Rooms/InflateMemo.swift).
import WebSocket

/// An event with the parts that must not depend on how the input was split.
private enum Observed: Equatable {
    case text([UInt8])
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    case closed(UInt16?, String)
}

private struct Run {
    var observed: [Observed] = []
    var failed = false
}

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

/// Decodes what a server sent: unmasked, complete frames only.
private func serverFrames(_ bytes: [UInt8]) -> [(FrameHeader, [UInt8])] {
    var parser = FrameParser(role: .client, maxPayloadLength: 125)
    var frames: [(FrameHeader, [UInt8])] = []
    bytes.withUnsafeBytes { raw in
        var index = 0
        while true {
            let step: FrameParser.Step
            do { step = try parser.next(raw, index: &index) } catch { fatalError("server sent an invalid frame: \(error)") }
            switch step {
            case .needMoreData:
                check(parser.isAtFrameBoundary, "server sent a truncated frame")
                return
            case .header(let header):
                frames.append((header, []))
            case .payload(let chunk, _):
                frames[frames.count - 1].1.append(contentsOf: chunk)
            case .frameEnd:
                break
            }
        }
    }
    return frames
}

/// The one control frame of `.send(bytes)`.
private func sentControl(_ bytes: [UInt8], _ opcode: Opcode) -> [UInt8] {
    let frames = serverFrames(bytes)
    check(frames.count == 1, "a .send holds \(frames.count) frames")
    let (header, payload) = frames[0]
    check(header.opcode == opcode && header.fin && !header.rsv1, "sent \(header.opcode), expected \(opcode)")
    return payload
}

/// Sends messages compressed from a server-role to a client-role connection.
private struct Echo {
    var sender: WebSocketConnection
    var receiver: WebSocketConnection

    init(_ parameters: DeflateParameters, maxMessageBytes: Int, memo: InflateMemo?) {
        guard let client = DeflateParameters.clientAccept(response: [parameters.responseHeaderValue]) else {
            fatalError("client refuses \(parameters.responseHeaderValue)")
        }
        sender = WebSocketConnection(role: .server, maxMessageBytes: maxMessageBytes, deflate: parameters)
        // Incompressible data grows a little, so the compressed frame of a message
        // at the limit may be over it: the receiver allows for that.
        receiver = WebSocketConnection(role: .client, maxMessageBytes: maxMessageBytes + 1024, deflate: client)
        receiver.messageInflater = memo
    }

    mutating func roundTrip(_ opcode: Opcode, _ payload: [UInt8]) {
        let frame = payload.withUnsafeBytes { sender.encodeMessage(opcode, $0) }
        var events: [WebSocketConnection.Event] = []
        receiver.receive(frame, events: &events)
        let ok: Bool
        switch (opcode, events.first) {
        case (.text, .text(let received)?), (.binary, .binary(let received)?): ok = events.count == 1 && received == payload
        default: ok = false
        }
        check(ok, "\(opcode) message of \(payload.count) bytes sent compressed comes back as \(events)")
    }
}

private struct Setup {
    var split: Int
    var deflate: DeflateParameters
    var echo: DeflateParameters
    var closeFirst: Bool
    var memo: Bool
    var maxMessageBytes: Int
}

private func run(_ wire: UnsafeRawBufferPointer, split: Int, deflate: DeflateParameters?, _ setup: Setup) -> Run {
    let limit = setup.maxMessageBytes
    var connection = WebSocketConnection(role: .server, maxMessageBytes: limit, deflate: deflate)
    if setup.closeFirst {
        let close = connection.encodeClose(code: .goingAway, reason: "bye")
        check(close != nil && connection.state == .closeSent, "encodeClose in a fresh connection")
        check(connection.encodeClose(code: .normal) == nil, "a second encodeClose")
    }
    // One memo shared by both echoes of an input, as connections share one for a broadcast.
    var echo = deflate == nil ? nil : Echo(setup.echo, maxMessageBytes: limit,
                                           memo: setup.memo ? InflateMemo(capacity: 2) : nil)
    var result = Run()
    var finished = false  // a .closed or .failed event was emitted
    let reads = split > 0 && split < wire.count
        ? [UnsafeRawBufferPointer(rebasing: wire[..<split]), UnsafeRawBufferPointer(rebasing: wire[split...])]
        : [wire]
    for read in reads {
        let stateBefore = connection.state
        var events: [WebSocketConnection.Event] = []
        connection.receive(read, events: &events)
        var pendingSend: [UInt8]?  // the last .send, which must belong to the event after it
        for event in events {
            check(!finished, "event \(event) after .closed/.failed")
            if case .send = event {} else if let bytes = pendingSend {
                // A .send is always directly followed by the event it answers.
                switch event {
                case .ping(let payload):
                    check(sentControl(bytes, .pong) == payload, "the pong does not echo the ping")
                case .closed(let code, _):
                    let reply = sentControl(bytes, .close)
                    check(reply == (code.map { [UInt8($0.rawValue >> 8), UInt8($0.rawValue & 0xFF)] } ?? []),
                          "close reply \(reply) to code \(String(describing: code))")
                case .failed(let error):
                    let reply = sentControl(bytes, .close)
                    check(reply.count >= 2 && UInt16(reply[0]) << 8 | UInt16(reply[1]) == error.code.rawValue,
                          "close frame \(reply) for failure \(error)")
                default:
                    check(false, ".send before \(event)")
                }
                pendingSend = nil
            }
            switch event {
            case .text(let payload):
                check(stateBefore == .open, "text message delivered in \(stateBefore)")
                check(payload.count <= limit, "text of \(payload.count) bytes")
                check(String(validating: payload, as: UTF8.self) != nil, "text message is not valid UTF-8")
                result.observed.append(.text(payload))
                echo?.roundTrip(.text, payload)
            case .binary(let payload):
                check(stateBefore == .open, "binary message delivered in \(stateBefore)")
                check(payload.count <= limit, "binary of \(payload.count) bytes")
                result.observed.append(.binary(payload))
                echo?.roundTrip(.binary, payload)
            case .ping(let payload):
                check(payload.count <= 125, "ping of \(payload.count) bytes")
                result.observed.append(.ping(payload))
            case .pong(let payload):
                check(payload.count <= 125, "pong of \(payload.count) bytes")
                result.observed.append(.pong(payload))
            case .send(let bytes):
                check(stateBefore == .open, ".send in \(stateBefore)")
                check(pendingSend == nil, "two .sends in a row")
                pendingSend = bytes
            case .closed(let code, let reason):
                finished = true
                check(connection.state == .closed, ".closed in state \(connection.state)")
                check(code.map { $0.isValidOnWire } ?? reason.isEmpty, "closed with \(String(describing: code)) \(reason)")
                result.observed.append(.closed(code?.rawValue, reason))
            case .failed(let error):
                finished = true
                result.failed = true
                check(connection.state == .closed, ".failed in state \(connection.state)")
                check(error.code.isValidOnWire, "failure with close code \(error.code)")
            }
        }
        check(pendingSend == nil, "a .send is the last event")
        if finished { check(connection.state == .closed, "finished but state \(connection.state)") }
    }
    // Nothing may come out of a closed connection.
    if connection.state == .closed {
        var events: [WebSocketConnection.Event] = []
        connection.receive(wire, events: &events)
        check(events.isEmpty, "\(events.count) events from a closed connection")
    }
    return result
}

/// An independent reading of RFC 6455 §5 for a connection that did not fail:
/// every complete frame must be valid, and the events are what it expects.
private func model(_ wire: UnsafeRawBufferPointer, limit: Int, closeFirst: Bool) -> [Observed] {
    let bytes = Array(wire)
    var expected: [Observed] = []
    var index = 0
    var message: (opcode: UInt8, payload: [UInt8])?
    while true {
        // The frame header, or stop at an incomplete one.
        guard bytes.count - index >= 2 else { break }
        let b0 = bytes[index], b1 = bytes[index + 1]
        var length = Int(b1 & 0x7F)
        var position = index + 2
        if length == 126 {
            guard bytes.count >= position + 2 else { break }
            length = Int(bytes[position]) << 8 | Int(bytes[position + 1])
            position += 2
        } else if length == 127 {
            guard bytes.count >= position + 8 else { break }
            var wide: UInt64 = 0
            for i in 0..<8 { wide = wide << 8 | UInt64(bytes[position + i]) }
            check(wide <= UInt64(limit), "accepted a frame of \(wide) bytes")
            length = Int(wide)
            position += 8
        }
        guard bytes.count >= position + 4 + length else { break }
        let fin = b0 & 0x80 != 0, opcode = b0 & 0x0F
        check(b0 & 0x70 == 0, "accepted RSV bits \(b0 & 0x70) without deflate")
        check(b1 & 0x80 != 0, "accepted an unmasked client frame")
        check(length <= limit, "accepted a frame of \(length) bytes")
        let key = bytes[position..<(position + 4)]
        position += 4
        let payload = (0..<length).map { bytes[position + $0] ^ key[key.startIndex + $0 % 4] }
        index = position + length
        switch opcode {
        case 0x1, 0x2:
            check(message == nil, "accepted a new message inside a fragmented one")
            message = (opcode, payload)
        case 0x0:
            check(message != nil, "accepted a continuation without a message")
            message!.payload += payload
        case 0x8, 0x9, 0xA:
            check(fin && length <= 125, "accepted a fragmented or long control frame")
        default:
            check(false, "accepted opcode \(opcode)")
        }
        if let partial = message {
            check(partial.payload.count <= limit, "accepted a message of \(partial.payload.count) bytes")
        }
        switch opcode {
        case 0x9: expected.append(.ping(payload))
        case 0xA: expected.append(.pong(payload))
        case 0x8:
            check(payload.count != 1, "accepted a 1-byte close payload")
            guard payload.count >= 2 else {
                expected.append(.closed(nil, ""))
                return expected
            }
            let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
            check(CloseCode(code).isValidOnWire, "accepted close code \(code)")
            guard let reason = String(validating: payload[2...], as: UTF8.self) else {
                check(false, "accepted a close reason that is not UTF-8")
                return expected
            }
            expected.append(.closed(code, reason))
            return expected
        default:
            guard fin, let complete = message else { break }
            message = nil
            if complete.opcode == 0x1 {
                check(String(validating: complete.payload, as: UTF8.self) != nil, "accepted a text message that is not UTF-8")
            }
            // After this side's close, messages are read but not delivered.
            if !closeFirst { expected.append(complete.opcode == 0x1 ? .text(complete.payload) : .binary(complete.payload)) }
        }
    }
    return expected
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let flags = Int(input[1])
    let wire = UnsafeRawBufferPointer(rebasing: input[2...])
    let setup = Setup(
        split: Int(input[0]) * wire.count / 256,
        deflate: DeflateParameters(clientNoContextTakeover: flags & 1 != 0),
        echo: DeflateParameters(serverNoContextTakeover: flags & 2 == 0, serverMaxWindowBits: 9 + (flags >> 2 & 7) % 7),
        closeFirst: flags & 0x20 != 0,
        memo: flags & 0x40 != 0,
        maxMessageBytes: flags & 0x80 != 0 ? 125 : 65536)
    for parameters in [nil, setup.deflate] {
        let whole = run(wire, split: 0, deflate: parameters, setup)
        let pieces = run(wire, split: setup.split, deflate: parameters, setup)
        // Where a read boundary falls must not change what the peer's bytes mean.
        check(whole.failed == pieces.failed, "failed: whole \(whole.failed), split at \(setup.split) \(pieces.failed)")
        check(whole.observed == pieces.observed, "events differ between one read and a split at \(setup.split)")
        if parameters == nil && !whole.failed {
            let expected = model(wire, limit: setup.maxMessageBytes, closeFirst: setup.closeFirst)
            check(whole.observed == expected, "events \(whole.observed), the model expects \(expected)")
        }
    }
    return 0
}
