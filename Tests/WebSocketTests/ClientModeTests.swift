import Testing
@testable import WebSocket

@Suite struct ClientModeTests {
    @Test func encodeTextIsMaskedAndDecodedByAServer() {
        var sender = client()
        var receiver = server()
        let text = Array("Hello from the client, a bit longer than one mask word".utf8)
        let frame = sender.encodeText(text)
        #expect(frame[0] == 0x81)
        #expect(frame[1] == 0x80 | UInt8(text.count), "mask bit set")
        #expect(Array(frame.suffix(text.count)) != text, "payload is masked on the wire")
        #expect(Ev.decodeSend(frame) == .send(opcode: 0x1, payload: text, masked: true))
        #expect(feed(&receiver, frame) == [.text(text)])
    }

    @Test func largeClientMessageUses64BitLengthAndRoundTrips() {
        var sender = client()
        var receiver = server()
        let payload = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let frame = sender.encodeBinary(payload)
        #expect(Array(frame.prefix(2)) == [0x82, 0xFF])
        #expect(feed(&receiver, frame, chunkSizes: [3, 5, 7, 1000, 1]) == [.binary(payload)])
    }

    @Test func masksAreNotReused() {
        var sender = client()
        let frames = (0..<8).map { _ in sender.encodeText(Array("same".utf8)) }
        #expect(Set(frames.map { Array($0[2..<6]) }).count > 1)
    }

    @Test func controlFramesFromAClientAreMasked() {
        var sender = client()
        #expect(Ev.decodeSend(sender.encodePing([1, 2])) == .send(opcode: 0x9, payload: [1, 2], masked: true))
        let close = sender.encodeClose(code: .normal, reason: "done")
        #expect(close.map(Ev.decodeSend) == .send(opcode: 0x8, payload: closeBody(1000, Array("done".utf8)), masked: true))
    }

    @Test func clientAnswersAServerPingWithAMaskedPong() {
        var connection = client()
        let events = feed(&connection, [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(events == [.send(opcode: 0xA, payload: Array("Hello".utf8), masked: true), .ping(Array("Hello".utf8))])
    }

    @Test func clientEchoesAServerClose() {
        var connection = client()
        let events = feed(&connection, wireFrame(0x88, closeBody(1001)))
        #expect(events == [.send(opcode: 0x8, payload: closeBody(1001), masked: true), .closed(code: 1001, reason: "")])
    }

    @Test func clientFailureCloseIsMasked() {
        var connection = client()
        let events = feed(&connection, wireFrame(0x83, []))
        #expect(events.first == .send(opcode: 0x8, payload: closeBody(1002) + Array("reserved opcode 3".utf8), masked: true))
        expectFailure(events, 1002)
    }

    @Test func serverToClientConversation() {
        var up = client()
        var down = server()
        var serverSide = feed(&down, up.encodeText(Array("hi".utf8)))
        #expect(serverSide == [.text("hi")])
        #expect(feed(&up, down.encodeText(Array("hello".utf8))) == [.text("hello")])
        serverSide = feed(&down, up.encodePing([42]))
        #expect(serverSide == [.send(opcode: 0xA, payload: [42], masked: false), .ping([42])])
    }
}
