import Testing
@testable import WebSocket

/// `PreparedMessage`: a broadcast framed once, its compressed frames built once per window size.
@Suite("Prepared message")
struct PreparedMessageTests {
    @Test("the frame is the payload's unmasked text frame")
    func frame() {
        let message = PreparedMessage(text: Array("hello".utf8))
        #expect(message.frame == FrameWriter.frame(opcode: .text, payload: Array("hello".utf8)))
    }

    @Test("a compressed frame is built once per window size and read back by a peer as the same text")
    func compressed() throws {
        let text = Array(String(repeating: "chat ", count: 200).utf8)
        let message = PreparedMessage(text: text)
        let first = try #require(message.compressedFrame(windowBits: 15))
        #expect(message.compressedFrame(windowBits: 15) == first)
        #expect(first.count < message.frame.count)
        #expect(first[0] & 0x40 != 0, "RSV1 marks a compressed message")
        var reader = WebSocketConnection(role: .client, maxMessageBytes: 1 << 20,
                                         deflate: DeflateParameters(serverNoContextTakeover: true, clientNoContextTakeover: true))
        var events: [WebSocketConnection.Event] = []
        reader.receive(first, events: &events)
        #expect(events.contains { if case .text(let got) = $0 { return got == text } else { return false } })
    }
}
