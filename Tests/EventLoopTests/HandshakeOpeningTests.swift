import EventLoop
import Testing

/// `HandshakeOpening`: a connection is ready to take a handshake turn once its first bytes are
/// a complete HTTP request head or TLS record, not when it is accepted.
@Suite("Handshake opening")
struct HandshakeOpeningTests {
    static let request = Array("GET /v1/ws?token=t HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n".utf8)

    /// A TLS handshake record header announcing `length` bytes, then `body` bytes of it.
    static func tlsRecord(length: Int, body: Int, type: UInt8 = 0x16) -> [UInt8] {
        [type, 0x03, 0x01, UInt8(length >> 8), UInt8(length & 0xFF)] + [UInt8](repeating: 0x01, count: body)
    }

    static func opening(_ expected: HandshakeOpening.Expected, fed chunks: [[UInt8]]) -> HandshakeOpening {
        var opening = HandshakeOpening(expecting: expected)
        for chunk in chunks { chunk.withUnsafeBytes { _ = opening.append($0) } }
        return opening
    }

    @Test("silence and a partial request line are not ready; the blank line makes the head ready, however split")
    func httpHead() {
        #expect(!Self.opening(.httpRequestHead, fed: []).isReady)
        #expect(!Self.opening(.httpRequestHead, fed: [Array("GET /v1/ws?tok".utf8)]).isReady)
        #expect(!Self.opening(.httpRequestHead, fed: [Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)]).isReady)
        for split in 1..<Self.request.count {
            let opening = Self.opening(.httpRequestHead, fed: [Array(Self.request[..<split]), Array(Self.request[split...])])
            #expect(opening.isReady, "split at \(split)")
            #expect(opening.bytes == Self.request, "split at \(split)")
        }
        let byteByByte = Self.opening(.httpRequestHead, fed: Self.request.map { [$0] })
        #expect(byteByByte.isReady && byteByByte.bytes == Self.request)
        let early = Self.opening(.httpRequestHead, fed: Self.request.dropLast().map { [$0] })
        #expect(!early.isReady)
    }

    @Test("a head that never ends is ready at the parser's limit, so it is refused (431) instead of waiting")
    func httpHeadLimit() {
        let endless = [UInt8](repeating: UInt8(ascii: "a"), count: HandshakeOpening.httpHeadLimit - 5)
        let atLimit = Self.opening(.httpRequestHead, fed: [Array("GET /".utf8), endless]).isReady
        #expect(atLimit)
        let short = Self.opening(.httpRequestHead, fed: [Array("GET /".utf8), Array(endless.dropLast())])
        let (shortReady, shortReadLimit) = (short.isReady, short.readLimit)
        #expect(!shortReady)
        #expect(shortReadLimit == 1)
    }

    @Test("a truncated ClientHello is not ready; a complete record is, as is one TLS refuses from its header")
    func tlsRecord() {
        #expect(!Self.opening(.tlsRecord, fed: []).isReady)
        #expect(!Self.opening(.tlsRecord, fed: [[0x16, 0x03]]).isReady)
        #expect(!Self.opening(.tlsRecord, fed: [Self.tlsRecord(length: 512, body: 511)]).isReady)
        #expect(Self.opening(.tlsRecord, fed: [Self.tlsRecord(length: 512, body: 512)]).isReady)
        let split = Self.tlsRecord(length: 300, body: 300)
        #expect(Self.opening(.tlsRecord, fed: split.map { [$0] }).isReady)
        // Plain HTTP sent to a TLS port, and a record longer than TLS allows: refused at once.
        #expect(Self.opening(.tlsRecord, fed: [Array("GET / HTTP/1.1\r\n".utf8)]).isReady)
        #expect(Self.opening(.tlsRecord, fed: [Self.tlsRecord(length: 0xFFFF, body: 0)]).isReady)
        #expect(!Self.opening(.tlsRecord, fed: [Self.tlsRecord(length: 16_384, body: 16_000)]).isReady)
    }

    @Test("what a waiting connection holds stays bounded: readLimit shrinks to what is left of the limit")
    func boundedHolding() {
        var opening = HandshakeOpening(expecting: .tlsRecord)
        #expect(opening.readLimit == HandshakeOpening.tlsRecordLimit)
        Self.tlsRecord(length: 16_384, body: 1000).withUnsafeBytes { _ = opening.append($0) }
        #expect(opening.readLimit == HandshakeOpening.tlsRecordLimit - 1005)
    }

    /// The loop's two steps together, as `SocketConnection` runs them: connections ask for a
    /// turn when their opening is ready.
    @Test("stalled connections hold no turn: one ready after 1,000 stalled ones starts at once")
    func stalledHoldNoTurn() {
        var admission = HandshakeAdmission<Int>(limit: 64)
        var openings: [Int: HandshakeOpening] = [:]
        var started: [Int] = []
        func receive(_ id: Int, _ bytes: [UInt8], expecting expected: HandshakeOpening.Expected) {
            var opening = openings[id] ?? HandshakeOpening(expecting: expected)
            let wasReady = opening.isReady
            bytes.withUnsafeBytes { _ = opening.append($0) }
            openings[id] = opening
            if opening.isReady && !wasReady && admission.arrive(id) { started.append(id) }
        }
        for id in 0..<1000 {
            let expected: HandshakeOpening.Expected = id % 4 < 2 ? .httpRequestHead : .tlsRecord
            switch id % 4 {
            case 0, 2: openings[id] = HandshakeOpening(expecting: expected)  // silent
            case 1: receive(id, Array("GET /v1/ws?token=".utf8), expecting: expected)
            default: receive(id, Self.tlsRecord(length: 512, body: 100), expecting: expected)
            }
        }
        #expect(started.isEmpty && admission.inProgress == 0 && admission.waitingCount == 0)
        receive(1000, Self.request, expecting: .httpRequestHead)
        receive(1001, Self.tlsRecord(length: 512, body: 512), expecting: .tlsRecord)
        #expect(started == [1000, 1001])
    }
}
