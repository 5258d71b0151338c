import Testing
import WebSocket
@testable import chat_loadtest

/// `memo.inflatedMessage` with an `inflate` that counts its calls and returns `plain`.
private func look(_ memo: InflateMemo, _ compressed: [UInt8], plain: [UInt8], calls: inout Int) throws -> [UInt8] {
    try memo.inflatedMessage(compressed) { () throws(WebSocketError) -> [UInt8] in
        calls += 1
        return plain
    }
}

@Suite struct InflateMemoTests {
    @Test("identical compressed bytes are inflated once")
    func hit() throws {
        let memo = InflateMemo(capacity: 4)
        var calls = 0
        #expect(try look(memo, [1, 2, 3], plain: [9], calls: &calls) == [9])
        #expect(try look(memo, [1, 2, 3], plain: [7], calls: &calls) == [9])
        #expect(try look(memo, [1, 2], plain: [8], calls: &calls) == [8])
        #expect(calls == 2)
    }

    @Test("it holds the last `capacity` messages, replacing the oldest first; capacity is at least 1")
    func eviction() throws {
        let memo = InflateMemo(capacity: 2)
        var calls = 0
        for key: UInt8 in [1, 2, 3] { _ = try look(memo, [key], plain: [key], calls: &calls) }
        #expect(calls == 3)
        _ = try look(memo, [2], plain: [2], calls: &calls)
        _ = try look(memo, [3], plain: [3], calls: &calls)
        #expect(calls == 3, "2 and 3 stayed")
        _ = try look(memo, [1], plain: [1], calls: &calls)
        #expect(calls == 4, "1 was replaced first")
        _ = try look(memo, [3], plain: [3], calls: &calls)
        #expect(calls == 4, "3 stayed; 1 replaced 2")
        #expect(InflateMemo(capacity: 0).capacity == 1)
    }

    @Test("a failed inflate is not remembered")
    func failure() throws {
        let memo = InflateMemo()
        #expect(throws: WebSocketError.self) {
            try memo.inflatedMessage([5]) { () throws(WebSocketError) -> [UInt8] in
                throw WebSocketError(.messageTooBig, "over")
            }
        }
        var calls = 0
        #expect(try look(memo, [5], plain: [6], calls: &calls) == [6])
        #expect(calls == 1)
    }

    @Test("client connections sharing a memo decode the same broadcasts, fragmented messages too")
    func sharedByConnections() throws {
        let memo = InflateMemo(capacity: 2)
        let texts = ["first broadcast " + String(repeating: "x", count: 50), "second", "third"]
        let frames = try texts.map { try #require(WebSocketConnection.compressedTextFrame(Array($0.utf8), windowBits: 15)) }
        for _ in 0..<3 {
            var receiver = WebSocketConnection(role: .client, maxMessageBytes: 1 << 20, deflate: DeflateParameters())
            receiver.messageInflater = memo
            #expect(received(&receiver, frames.flatMap { $0 }) == texts)
        }
        // The first broadcast again, in two frames (RSV1 on the first only): the same compressed message.
        let compressed = Array(frames[0].dropFirst(2))
        let half = compressed.count / 2
        let fragmented = [0x41, UInt8(half)] + compressed[..<half] + [0x80, UInt8(compressed.count - half)] + compressed[half...]
        var receiver = WebSocketConnection(role: .client, maxMessageBytes: 1 << 20, deflate: DeflateParameters())
        receiver.messageInflater = memo
        #expect(received(&receiver, Array(fragmented)) == [texts[0]])
    }

    /// The texts `bytes` deliver, or a description of any other event.
    private func received(_ connection: inout WebSocketConnection, _ bytes: [UInt8]) -> [String] {
        var events: [WebSocketConnection.Event] = []
        connection.receive(bytes, events: &events)
        return events.map { event in
            if case .text(let text) = event { return String(decoding: text, as: UTF8.self) }
            return "\(event)"
        }
    }
}
