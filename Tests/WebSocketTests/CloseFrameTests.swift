import Testing
@testable import WebSocket

@Suite struct CloseFrameTests {
    @Test func emptyCloseGetsAnEmptyClose() {
        var connection = server()
        let events = feed(&connection, clientFrame(0x88, []))
        #expect(events == [.send(opcode: 0x8, payload: [], masked: false), .closed(code: nil, reason: "")])
        #expect(connection.state == .closed)
    }

    @Test func oneBytePayload() {
        var connection = server()
        expectFailure(feed(&connection, clientFrame(0x88, [0x03])), 1002)
    }

    @Test(arguments: [UInt16(0), 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535])
    func invalidCodes(code: UInt16) {
        var connection = server()
        let events = feed(&connection, clientFrame(0x88, closeBody(code)))
        expectFailure(events, 1002)
        #expect(!events.contains(where: { if case .closed = $0 { return true } else { return false } }))
    }

    @Test(arguments: [UInt16(1000), 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999])
    func validCodesAreEchoed(code: UInt16) {
        var connection = server()
        let events = feed(&connection, clientFrame(0x88, closeBody(code, Array("bye".utf8))))
        #expect(events == [.send(opcode: 0x8, payload: closeBody(code), masked: false), .closed(code: code, reason: "bye")])
    }

    @Test func closeCodeWireValidity() {
        for raw in UInt16(0)...5100 {
            let expected = (1000...1003).contains(raw) || (1007...1014).contains(raw) || (3000...4999).contains(raw)
            #expect(CloseCode(raw).isValidOnWire == expected, "\(raw)")
        }
    }

    @Test func multiByteReason() {
        var connection = server()
        let events = feed(&connection, clientFrame(0x88, closeBody(1001, Array("au revoir ✓".utf8))))
        #expect(events.last == .closed(code: 1001, reason: "au revoir ✓"))
    }

    @Test(arguments: [[UInt8(0xFF)], [0xCE, 0xBA, 0xE1], [0xED, 0xA0, 0x80], [0x61, 0xC0, 0xAF]])
    func invalidUTF8Reason(reason: [UInt8]) {
        var connection = server()
        let events = feed(&connection, clientFrame(0x88, closeBody(1000, reason)))
        expectFailure(events, 1007)
    }

    @Test func bytesAfterTheCloseAreIgnored() {
        var connection = server()
        let events = feed(&connection, clientFrame(0x88, closeBody(1000)) + clientFrame(0x81, "after"))
        #expect(events == [Ev.serverClose(1000), .closed(code: 1000, reason: "")])
    }

    @Test func closeWeStartedIsAnsweredWithoutASecondClose() {
        var connection = server()
        let frame = connection.encodeClose(code: .goingAway, reason: "drain")
        #expect(frame.map(Ev.decodeSend) == .send(opcode: 0x8, payload: closeBody(1001, Array("drain".utf8)), masked: false))
        #expect(connection.state == .closeSent)
        #expect(connection.encodeClose(code: .normal) == nil)
        // While waiting, a ping gets no pong and a message is not delivered.
        #expect(feed(&connection, clientFrame(0x89, [1]) + clientFrame(0x81, "late")) == [.ping([1])])
        #expect(feed(&connection, clientFrame(0x88, closeBody(1001))) == [.closed(code: 1001, reason: "")])
        #expect(connection.state == .closed)
    }

    @Test func failureAfterOurCloseQueuesNoSecondCloseFrame() {
        var connection = server()
        _ = connection.encodeClose(code: .normal)
        #expect(feed(&connection, clientFrame(0x83, [])) == [.failed(1002)])
    }
}
