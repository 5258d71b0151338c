// libFuzzer target: the receive side of a server-role WebSocketConnection.
//
// Input layout: byte 0 picks the split point of the rest (and, by its low bit,
// whether the client asked for client_no_context_takeover); bytes 1... are the
// wire bytes a client sent. Every input runs through four connections: without
// and with permessage-deflate, each fed in one read and in two reads. With
// deflate, every message received is also sent back compressed (bits 1-4 of
// byte 0 pick server_no_context_takeover and server_max_window_bits) to a
// client-role connection, which must get the same payload.
// Build and run with `scripts/fuzz FrameParserFuzz`.
import WebSocket

private let maxMessageBytes = 65536

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

/// Sends messages compressed from a server-role to a client-role connection.
private struct Echo {
    var sender: WebSocketConnection
    var receiver: WebSocketConnection

    init(_ parameters: DeflateParameters) {
        guard let client = DeflateParameters.clientAccept(response: [parameters.responseHeaderValue]) else {
            fatalError("client refuses \(parameters.responseHeaderValue)")
        }
        sender = WebSocketConnection(role: .server, maxMessageBytes: maxMessageBytes, deflate: parameters)
        // Incompressible data grows a little, so the compressed frame of a message
        // at the limit may be over it: the receiver allows for that.
        receiver = WebSocketConnection(role: .client, maxMessageBytes: maxMessageBytes + 1024, deflate: client)
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

private func run(_ wire: UnsafeRawBufferPointer, split: Int, deflate: DeflateParameters?, echo echoParameters: DeflateParameters) -> Run {
    var connection = WebSocketConnection(role: .server, maxMessageBytes: maxMessageBytes, deflate: deflate)
    var echo = deflate == nil ? nil : Echo(echoParameters)
    var result = Run()
    var finished = false  // a .closed or .failed event was emitted
    let reads = split > 0 && split < wire.count
        ? [UnsafeRawBufferPointer(rebasing: wire[..<split]), UnsafeRawBufferPointer(rebasing: wire[split...])]
        : [wire]
    for read in reads {
        var events: [WebSocketConnection.Event] = []
        connection.receive(read, events: &events)
        for event in events {
            check(!finished, "event \(event) after .closed/.failed")
            switch event {
            case .text(let payload):
                check(payload.count <= maxMessageBytes, "text of \(payload.count) bytes")
                check(String(validating: payload, as: UTF8.self) != nil, "text message is not valid UTF-8")
                result.observed.append(.text(payload))
                echo?.roundTrip(.text, payload)
            case .binary(let payload):
                check(payload.count <= maxMessageBytes, "binary of \(payload.count) bytes")
                result.observed.append(.binary(payload))
                echo?.roundTrip(.binary, payload)
            case .ping(let payload):
                check(payload.count <= 125, "ping of \(payload.count) bytes")
                result.observed.append(.ping(payload))
            case .pong(let payload):
                check(payload.count <= 125, "pong of \(payload.count) bytes")
                result.observed.append(.pong(payload))
            case .send(let bytes):
                check(!bytes.isEmpty && bytes.count <= maxMessageBytes + 14, "send of \(bytes.count) bytes")
            case .closed(let code, let reason):
                finished = true
                check(connection.state == .closed, ".closed in state \(connection.state)")
                result.observed.append(.closed(code?.rawValue, reason))
            case .failed(let error):
                finished = true
                result.failed = true
                check(connection.state == .closed, ".failed in state \(connection.state)")
                check(error.code.isValidOnWire, "failure with close code \(error.code)")
            }
        }
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

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let first = Int(input[0])
    let wire = UnsafeRawBufferPointer(rebasing: input[1...])
    let split = first * wire.count / 256
    let deflate = DeflateParameters(clientNoContextTakeover: first & 1 == 1)
    let echo = DeflateParameters(serverNoContextTakeover: first & 2 == 0, serverMaxWindowBits: 9 + (first >> 2) % 7)
    for parameters in [nil, deflate] {
        let whole = run(wire, split: 0, deflate: parameters, echo: echo)
        let pieces = run(wire, split: split, deflate: parameters, echo: echo)
        // Where a read boundary falls must not change what the peer's bytes mean.
        check(whole.failed == pieces.failed, "failed: whole \(whole.failed), split at \(split) \(pieces.failed)")
        check(whole.observed == pieces.observed, "events differ between one read and a split at \(split)")
    }
    return 0
}
