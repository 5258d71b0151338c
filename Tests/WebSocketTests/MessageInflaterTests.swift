import Testing
@testable import WebSocket

/// A `MessageInflater` that records the compressed messages it is handed and answers
/// identical bytes with its earlier result, as a memo shared by connections would.
private final class RecordingInflater: MessageInflater {
    private(set) var handed: [[UInt8]] = []
    private(set) var inflateCalls = 0
    private var results: [[UInt8]: [UInt8]] = [:]

    func inflatedMessage(_ compressed: [UInt8], inflate: () throws(WebSocketError) -> [UInt8]) throws(WebSocketError) -> [UInt8] {
        handed.append(compressed)
        if let earlier = results[compressed] { return earlier }
        inflateCalls += 1
        let plain = try inflate()
        results[compressed] = plain
        return plain
    }
}

private func clientWith(_ inflater: RecordingInflater, maxMessageBytes: Int = 1 << 20,
                        deflate: DeflateParameters = DeflateParameters()) -> WebSocketConnection {
    var connection = client(maxMessageBytes: maxMessageBytes, deflate: deflate)
    connection.messageInflater = inflater
    return connection
}

@Suite struct MessageInflaterTests {
    @Test("connections sharing a message inflater hand it each whole compressed message; one inflate serves every copy")
    func sharedAcrossConnections() throws {
        let inflater = RecordingInflater()
        let texts = ["first broadcast " + String(repeating: "x", count: 50), "second", "third"]
        let frames = try texts.map { try #require(WebSocketConnection.compressedTextFrame(Array($0.utf8), windowBits: 15)) }
        for _ in 0..<3 {
            var receiver = clientWith(inflater)
            #expect(feed(&receiver, frames.joined().map { $0 }, chunkSizes: [3, 7, 1]) == texts.map { .text($0) })
        }
        #expect(inflater.inflateCalls == 3)
        #expect(inflater.handed.count == 9)
        // The frame's payload after its two-byte header: what the peer compressed, tail stripped.
        #expect(inflater.handed.first == Array(frames[0].dropFirst(2)))
    }

    @Test("a message in two frames (RSV1 on the first only) is handed over once, joined")
    func fragmentedMessage() {
        let inflater = RecordingInflater()
        let text = "fragmented " + String(repeating: "y", count: 80)
        let compressed = deflated(Array(text.utf8))
        let half = compressed.count / 2
        let fragmented = [0x41, UInt8(half)] + compressed[..<half] + [0x80, UInt8(compressed.count - half)] + compressed[half...]
        var receiver = clientWith(inflater)
        #expect(feed(&receiver, Array(fragmented)) == [.text(text)])
        #expect(inflater.handed == [compressed])
    }

    @Test("not consulted when the peer keeps its context (its bytes depend on history) or sends uncompressed")
    func onlyForContextFreeCompressedMessages() {
        let inflater = RecordingInflater()
        var takeover = clientWith(inflater, deflate: DeflateParameters(serverNoContextTakeover: false))
        #expect(feed(&takeover, DeflateTests.rfcHello) == [.text("Hello")])
        var plain = clientWith(inflater)
        #expect(feed(&plain, wireFrame(0x81, Array("Hello".utf8))) == [.text("Hello")])
        #expect(inflater.handed.isEmpty)
    }

    @Test("limits stay the connection's: compressed bytes over maxMessageBytes never reach the inflater, inflate stops at it")
    func limits() {
        let overCompressed = RecordingInflater()
        var small = clientWith(overCompressed, maxMessageBytes: 100)
        let noise = (0..<120).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
        expectFailure(feed(&small, wireFrame(0x41, Array(noise[..<60])) + wireFrame(0x80, Array(noise[60...]))), 1009)
        #expect(overCompressed.handed.isEmpty)

        let bomb = RecordingInflater()
        var receiver = clientWith(bomb, maxMessageBytes: 65536)
        expectFailure(feed(&receiver, wireFrame(0xC2, tenMegabyteBomb)), 1009)
        #expect(bomb.handed.count == 1 && bomb.inflateCalls == 1)
    }

    @Test("the connection still checks the UTF-8 of what the inflater returns")
    func textIsValidated() {
        let inflater = RecordingInflater()
        var receiver = clientWith(inflater)
        expectFailure(feed(&receiver, wireFrame(0xC1, deflated(Array("bad ".utf8) + [0xED, 0xA0, 0x80]))), 1007)
        #expect(inflater.handed.count == 1)
    }
}
