import Testing
@testable import WebSocket

// Shared helpers for the WebSocket tests. Frames are built here byte by byte,
// independently of FrameWriter, so a writer bug cannot hide a parser bug.

/// The masking key of the RFC 6455 §5.7 examples.
let rfcMaskKey: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

/// `first` is the frame's first byte (FIN, RSV1-3, opcode), written as is.
func wireHeader(_ first: UInt8, length: UInt64, mask: [UInt8]? = nil) -> [UInt8] {
    let maskBit: UInt8 = mask == nil ? 0 : 0x80
    var out: [UInt8] = [first]
    if length < 126 {
        out.append(maskBit | UInt8(length))
    } else if length <= 0xFFFF {
        out += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
    } else {
        out.append(maskBit | 127)
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
        }
    }
    if let mask { out += mask }
    return out
}

func xorMask(_ payload: [UInt8], _ key: [UInt8], offset: Int = 0) -> [UInt8] {
    payload.enumerated().map { $0.element ^ key[($0.offset + offset) % 4] }
}

/// One frame; masked with `mask` when given.
func wireFrame(_ first: UInt8, _ payload: [UInt8], mask: [UInt8]? = nil) -> [UInt8] {
    wireHeader(first, length: UInt64(payload.count), mask: mask) + (mask.map { xorMask(payload, $0) } ?? payload)
}

/// A masked frame as a client sends it (what a server-role connection receives).
func clientFrame(_ first: UInt8, _ payload: [UInt8], key: [UInt8] = rfcMaskKey) -> [UInt8] {
    wireFrame(first, payload, mask: key)
}

func clientFrame(_ first: UInt8, _ text: String, key: [UInt8] = rfcMaskKey) -> [UInt8] {
    clientFrame(first, Array(text.utf8), key: key)
}

/// A close-frame payload: code in network order, then the reason.
func closeBody(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
    [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
}

/// Deterministic PRNG (SplitMix64) so random chunkings are reproducible.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An Equatable view of `WebSocketConnection.Event`. Outgoing frames are decoded
/// (and unmasked), so client-role output with random keys still compares equal.
enum Ev: Equatable, CustomStringConvertible {
    case text([UInt8])
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// One outgoing frame: opcode, unmasked payload, whether it was masked.
    case send(opcode: UInt8, payload: [UInt8], masked: Bool)
    /// A `.send` that is not exactly one well-formed frame.
    case badSend([UInt8])
    case closed(code: UInt16?, reason: String)
    case failed(UInt16)

    static func text(_ string: String) -> Ev { .text(Array(string.utf8)) }

    var description: String {
        switch self {
        case .text(let b): return "text(\(String(decoding: b, as: UTF8.self).prefix(40)) [\(b.count)])"
        case .binary(let b): return "binary[\(b.count)]"
        case .ping(let b): return "ping\(b)"
        case .pong(let b): return "pong\(b)"
        case .send(let op, let p, let m): return "send(op \(op), \(p.count > 16 ? "[\(p.count) bytes]" : "\(p)"), masked \(m))"
        case .badSend(let b): return "badSend\(b)"
        case .closed(let c, let r): return "closed(\(c.map(String.init) ?? "nil"), \(r))"
        case .failed(let c): return "failed(\(c))"
        }
    }

    init(_ event: WebSocketConnection.Event) {
        switch event {
        case .text(let b): self = .text(b)
        case .binary(let b): self = .binary(b)
        case .ping(let b): self = .ping(b)
        case .pong(let b): self = .pong(b)
        case .send(let bytes): self = Ev.decodeSend(bytes)
        case .closed(let code, let reason): self = .closed(code: code?.rawValue, reason: reason)
        case .failed(let error): self = .failed(error.code.rawValue)
        }
    }

    /// Decodes exactly one frame; anything else is `.badSend`.
    static func decodeSend(_ bytes: [UInt8]) -> Ev {
        guard bytes.count >= 2, bytes[0] & 0x80 != 0 else { return .badSend(bytes) }
        var position = 2
        var length = Int(bytes[1] & 0x7F)
        if length == 126 {
            guard bytes.count >= 4 else { return .badSend(bytes) }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            position = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return .badSend(bytes) }
            length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
            position = 10
        }
        let masked = bytes[1] & 0x80 != 0
        var key: [UInt8]?
        if masked {
            guard bytes.count >= position + 4 else { return .badSend(bytes) }
            key = Array(bytes[position..<position + 4])
            position += 4
        }
        guard bytes.count == position + length else { return .badSend(bytes) }
        let raw = Array(bytes[position...])
        return .send(opcode: bytes[0] & 0x0F, payload: key.map { xorMask(raw, $0) } ?? raw, masked: masked)
    }

    /// An unmasked close frame as a server sends it.
    static func serverClose(_ code: UInt16) -> Ev { .send(opcode: 0x8, payload: closeBody(code), masked: false) }
}

func feed(_ connection: inout WebSocketConnection, _ bytes: [UInt8]) -> [Ev] {
    var events: [WebSocketConnection.Event] = []
    connection.receive(bytes, events: &events)
    return events.map(Ev.init)
}

/// Feeds `bytes` in pieces of the given sizes (the last piece takes the rest).
func feed(_ connection: inout WebSocketConnection, _ bytes: [UInt8], chunkSizes: [Int]) -> [Ev] {
    var events: [Ev] = []
    var start = 0
    var sizes = chunkSizes[...]
    while start < bytes.count {
        let size = max(1, sizes.popFirst() ?? bytes.count)
        let end = min(bytes.count, start + size)
        events += feed(&connection, Array(bytes[start..<end]))
        start = end
    }
    return events
}

func server(maxMessageBytes: Int = 1 << 20, deflate: DeflateParameters? = nil) -> WebSocketConnection {
    WebSocketConnection(role: .server, maxMessageBytes: maxMessageBytes, deflate: deflate)
}

func client(maxMessageBytes: Int = 1 << 20, deflate: DeflateParameters? = nil) -> WebSocketConnection {
    WebSocketConnection(role: .client, maxMessageBytes: maxMessageBytes, deflate: deflate)
}

/// Checks that `events` end the connection with `code`: a close frame carrying
/// the code is queued, followed by `.failed(code)`, and nothing comes after.
func expectFailure(_ events: [Ev], _ code: UInt16, sourceLocation: SourceLocation = #_sourceLocation) {
    guard events.count >= 2 else {
        Issue.record("expected a close frame and failed(\(code)), got \(events)", sourceLocation: sourceLocation)
        return
    }
    let tail = Array(events.suffix(2))
    #expect(tail[1] == .failed(code), "events: \(events)", sourceLocation: sourceLocation)
    if case .send(let opcode, let payload, _) = tail[0] {
        #expect(opcode == 0x8, sourceLocation: sourceLocation)
        #expect(Array(payload.prefix(2)) == closeBody(code), sourceLocation: sourceLocation)
    } else {
        Issue.record("expected a close frame before failed, got \(tail[0])", sourceLocation: sourceLocation)
    }
}

/// Only the messages of an event list (text, binary).
func messages(_ events: [Ev]) -> [Ev] {
    events.filter {
        switch $0 {
        case .text, .binary: return true
        default: return false
        }
    }
}
