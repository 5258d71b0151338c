import Testing
@testable import WebSocket

/// Representative byte streams; each must give the same events however reads split it.
enum SplitStream: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case plainMessages, longLengths, fragmentedWithControl, compressedToServer, compressedToClient
    case invalidUTF8, reservedOpcode, tooBig, decompressionBomb, closeHandshake

    var testDescription: String { rawValue }

    /// A fresh receiving connection and the bytes it gets.
    func make() -> (connection: WebSocketConnection, bytes: [UInt8]) {
        switch self {
        case .plainMessages:
            let bytes = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
                + clientFrame(0x82, (0..<256).map { UInt8($0) }, key: [1, 2, 3, 4])
                + clientFrame(0x81, []) + clientFrame(0x89, "ping", key: [0xFF, 0, 0xFF, 0])
                + clientFrame(0x8A, "pong") + clientFrame(0x81, "Grüße 🎉", key: [9, 9, 9, 9])
                + clientFrame(0x88, closeBody(1000, Array("bye".utf8)))
            return (server(), bytes)
        case .longLengths:
            let bytes = clientFrame(0x82, (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }, key: [0xA1, 0xB2, 0xC3, 0xD4])
                + clientFrame(0x81, String(repeating: "é", count: 100))
                + clientFrame(0x82, (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }, key: [5, 6, 7, 8])
            return (server(), bytes)
        case .fragmentedWithControl:
            let euro: [UInt8] = [0xE2, 0x82, 0xAC]
            let bytes = clientFrame(0x01, "Hel") + clientFrame(0x00, "lo, ", key: [1, 1, 2, 2])
                + clientFrame(0x89, "p") + clientFrame(0x80, "world")
                + clientFrame(0x02, [1, 2, 3]) + clientFrame(0x8A, [7]) + clientFrame(0x00, [])
                + clientFrame(0x80, [UInt8](repeating: 4, count: 300))
                + clientFrame(0x01, [0x61, euro[0]]) + clientFrame(0x00, [euro[1]]) + clientFrame(0x80, [euro[2]])
            return (server(), bytes)
        case .compressedToServer:
            var sender = client(deflate: DeflateParameters())
            var bytes: [UInt8] = []
            for text in ["Hello", "Hello", "", String(repeating: "split me ", count: 3000), "Hello again"] {
                bytes += sender.encodeText(Array(text.utf8))
            }
            bytes += clientFrame(0x81, "plain, not compressed")
            bytes += sender.encodeBinary((0..<5000).map { UInt8(truncatingIfNeeded: $0 * $0) })
            // A compressed message in three fragments (RSV1 on the first only), a ping in between.
            let compressed = deflated(Array(String(repeating: "fragmented and compressed ", count: 40).utf8))
            let third = compressed.count / 3
            bytes += clientFrame(0x41, Array(compressed[..<third])) + clientFrame(0x89, [1])
                + clientFrame(0x00, Array(compressed[third..<(2 * third)])) + clientFrame(0x80, Array(compressed[(2 * third)...]))
            return (server(deflate: DeflateParameters()), bytes)
        case .compressedToClient:
            let hello: [UInt8] = [0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
            let again: [UInt8] = [0xC1, 0x05, 0xF2, 0x00, 0x11, 0x00, 0x00]
            let fragmented: [UInt8] = [0x41, 0x03, 0xF2, 0x48, 0xCD, 0x80, 0x04, 0xC9, 0xC9, 0x07, 0x00]
            let stored: [UInt8] = [0xC1, 0x0B, 0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00]
            let twoBlocks: [UInt8] = [0xC1, 0x0D, 0xF2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xCA, 0xC9, 0xC9, 0x07, 0x00]
            let final: [UInt8] = [0xC1, 0x08, 0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00]
            let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
            let bytes = hello + again + fragmented + again + stored + ping + again + twoBlocks + again + final
            return (client(deflate: DeflateParameters(serverNoContextTakeover: false)), bytes)
        case .invalidUTF8:
            let bytes = clientFrame(0x81, "fine") + clientFrame(0x01, "still fine ")
                + clientFrame(0x00, Array("bad ".utf8) + [0xF4, 0x90, 0x80, 0x80]) + clientFrame(0x80, "never seen")
                + clientFrame(0x81, "ignored")
            return (server(), bytes)
        case .reservedOpcode:
            let bytes = clientFrame(0x82, [1, 2, 3]) + clientFrame(0x8B, []) + clientFrame(0x81, "ignored")
            return (server(), bytes)
        case .tooBig:
            let bytes = clientFrame(0x81, String(repeating: "a", count: 500))
                + wireHeader(0x82, length: 1 << 62, mask: rfcMaskKey) + [UInt8](repeating: 0xAA, count: 100)
            return (server(maxMessageBytes: 1000), bytes)
        case .decompressionBomb:
            let bytes = clientFrame(0xC1, deflated(Array(String(repeating: "ok ", count: 3000).utf8)))
                + clientFrame(0xC2, deflated([UInt8](repeating: 0, count: 1_000_000)))
            return (server(maxMessageBytes: 65536, deflate: DeflateParameters()), bytes)
        case .closeHandshake:
            let bytes = clientFrame(0x81, "last words") + clientFrame(0x88, closeBody(1001, Array("going".utf8)))
                + clientFrame(0x81, "after close")
            return (server(), bytes)
        }
    }
}

/// Whole stream, one byte at a time, and seeded random read sizes.
private func chunkings(count: Int) -> [(name: String, sizes: [Int])] {
    var result: [(name: String, sizes: [Int])] = [("whole", [count]), ("byte by byte", Array(repeating: 1, count: count))]
    for seed in UInt64(1)...6 {
        var random = SeededRandom(seed: seed)
        var sizes: [Int] = []
        var total = 0
        while total < count {
            // Mostly small reads (headers split anywhere), sometimes large ones.
            let size = Bool.random(using: &random) ? Int.random(in: 1...20, using: &random) : Int.random(in: 1...5000, using: &random)
            sizes.append(size)
            total += size
        }
        result.append(("random seed \(seed)", sizes))
    }
    return result
}

@Suite struct SplitReadTests {
    @Test(arguments: SplitStream.allCases)
    func sameEventsForEverySplit(stream: SplitStream) {
        var (connection, bytes) = stream.make()
        let whole = feed(&connection, bytes)
        #expect(whole.count >= 2, "the stream produces events: \(whole)")
        for (name, sizes) in chunkings(count: bytes.count).dropFirst() {
            var (fresh, _) = stream.make()
            // A fresh connection (its own bytes are discarded), fed the same bytes as the first.
            let events = feed(&fresh, bytes, chunkSizes: sizes)
            #expect(events == whole, "\(name)")
        }
    }

    @Test func expectedEventsOfTheFragmentedStream() {
        var (connection, bytes) = SplitStream.fragmentedWithControl.make()
        #expect(feed(&connection, bytes, chunkSizes: Array(repeating: 1, count: bytes.count)) == [
            .send(opcode: 0xA, payload: [0x70], masked: false), .ping([0x70]), .text("Hello, world"),
            .pong([7]), .binary([1, 2, 3] + [UInt8](repeating: 4, count: 300)), .text("a€"),
        ])
    }

    @Test func expectedEventsOfTheCompressedClientStream() {
        var (connection, bytes) = SplitStream.compressedToClient.make()
        let events = feed(&connection, bytes, chunkSizes: Array(repeating: 1, count: bytes.count))
        #expect(messages(events) == Array(repeating: .text("Hello"), count: 9))
        #expect(events.contains(.send(opcode: 0xA, payload: Array("Hello".utf8), masked: true)))
    }

    @Test(arguments: [(SplitStream.invalidUTF8, UInt16(1007)), (.reservedOpcode, 1002), (.tooBig, 1009), (.decompressionBomb, 1009)])
    func erroringStreamsFailTheSameWayByteByByte(stream: SplitStream, code: UInt16) {
        var (connection, bytes) = stream.make()
        let events = feed(&connection, bytes, chunkSizes: Array(repeating: 1, count: bytes.count))
        expectFailure(events, code)
        #expect(messages(events).count == 1, "one message before the error, none after: \(events)")
    }

    @Test func httpRequestByteByByte() {
        let frames = clientFrame(0x81, "pipelined") + clientFrame(0x89, [])
        let streams = [
            requestBytes(upgradeHead) + frames,
            requestBytes(["POST /admin/users HTTP/1.1", "Content-Length: 13"], body: Array("{\"id\":\"u1\"}\r\n".utf8)) + [0x47],
            requestBytes(["GET / HTTP/1.1", "X-Fill: " + String(repeating: "f", count: 8192 - 24)]),
        ]
        for bytes in streams {
            let whole = parseRequest(bytes)
            guard case .request = whole else {
                Issue.record("not parsed whole: \(whole)")
                continue
            }
            #expect(parseRequest(bytes, chunk: 1) == whole)
            for (name, sizes) in chunkings(count: bytes.count).dropFirst(2) {
                #expect(parseRequestInPieces(bytes, sizes) == whole, "\(name)")
            }
        }
    }

    @Test func httpFailuresByteByByte() {
        let streams = [
            requestBytes(["GET / HTTP/1.1", "X-Big: " + String(repeating: "a", count: 8200)]),
            requestBytes(["GET / HTTP/1.1", "X-Fill: " + String(repeating: "f", count: 8193 - 24)]),  // one byte over
            requestBytes(["GET / HTTP/1.1"] + (0..<101).map { "X-H\($0): v" }),
            requestBytes(["BAD REQUEST LINE HERE", "Host: x"]),
            requestBytes(["POST / HTTP/1.1", "Transfer-Encoding: chunked"]),
        ]
        for bytes in streams {
            let whole = parseRequest(bytes)
            #expect(whole == .failure(431) || whole == .failure(400))
            #expect(parseRequest(bytes, chunk: 1) == whole)
        }
    }
}

private func parseRequestInPieces(_ bytes: [UInt8], _ sizes: [Int]) -> ParseOutcome {
    var parser = HTTPRequestParser()
    var start = 0
    for size in sizes where start < bytes.count {
        let end = min(bytes.count, start + size)
        let piece = Array(bytes[start..<end])
        start = end
        do throws(HTTPRequestParser.Failure) {
            if let request = try feedOnce(&parser, piece) {
                return .request(ParsedRequest(
                    method: request.method, target: request.target, version: request.version,
                    headers: request.headers.map { "\($0.name): \($0.value)" }, body: request.body,
                    leftover: parser.leftover + bytes[start...]))
            }
        } catch {
            return .failure(error.status)
        }
    }
    return .incomplete
}
