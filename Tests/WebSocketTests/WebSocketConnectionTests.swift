import Testing
@testable import WebSocket

@Suite struct WebSocketConnectionTests {
    @Test func rfcMaskedHelloIsATextMessage() {
        var connection = server()
        let events = feed(&connection, [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        #expect(events == [.text("Hello")])
        #expect(connection.state == .open)
    }

    @Test func binaryMessage() {
        var connection = server()
        let payload = (0..<256).map { UInt8($0) }
        #expect(feed(&connection, clientFrame(0x82, payload)) == [.binary(payload)])
    }

    @Test func emptyTextAndBinaryMessages() {
        var connection = server()
        #expect(feed(&connection, clientFrame(0x81, []) + clientFrame(0x82, [])) == [.text([]), .binary([])])
    }

    @Test func sixtyFourBitLengthMessage() {
        var connection = server(maxMessageBytes: 1 << 20)
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes = clientFrame(0x82, payload, key: [0xA1, 0xB2, 0xC3, 0xD4])
        #expect(bytes[1] == 0xFF)
        #expect(feed(&connection, bytes) == [.binary(payload)])
    }

    @Test func pingGetsAPongWithTheSamePayloadBeforeThePingEvent() {
        var connection = server()
        let events = feed(&connection, clientFrame(0x89, "Hello"))
        #expect(events == [
            .send(opcode: 0xA, payload: Array("Hello".utf8), masked: false),
            .ping(Array("Hello".utf8)),
        ])
    }

    @Test func pongWithA125BytePayloadFromA125BytePing() {
        var connection = server()
        let payload = (0..<125).map { UInt8($0) }
        let events = feed(&connection, clientFrame(0x89, payload))
        #expect(events.first == .send(opcode: 0xA, payload: payload, masked: false))
    }

    @Test func pongPassesThroughWithoutAReply() {
        var connection = server()
        #expect(feed(&connection, clientFrame(0x8A, "beat")) == [.pong(Array("beat".utf8))])
    }

    @Test func unmaskedClientFrameIsAProtocolError() {
        var connection = server()
        let events = feed(&connection, [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        expectFailure(events, 1002)
        #expect(messages(events).isEmpty)
        #expect(connection.state == .closed)
    }

    @Test func maskedServerFrameIsAProtocolErrorForAClient() {
        var connection = client()
        let events = feed(&connection, [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        expectFailure(events, 1002)
        #expect(messages(events).isEmpty)
    }

    @Test(arguments: [UInt8(0x3), 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF])
    func reservedOpcodes(raw: UInt8) {
        var connection = server()
        expectFailure(feed(&connection, clientFrame(0x80 | raw, "x")), 1002)
    }

    @Test func rsv1WithoutDeflate() {
        var connection = server()
        expectFailure(feed(&connection, clientFrame(0xC1, "Hello")), 1002)
    }

    @Test(arguments: [UInt8(0x20), 0x10])
    func rsv2AndRsv3(bit: UInt8) {
        var plain = server()
        expectFailure(feed(&plain, clientFrame(0x81 | bit, "Hello")), 1002)
        var compressed = server(deflate: DeflateParameters())
        expectFailure(feed(&compressed, clientFrame(0x81 | bit, "Hello")), 1002)
    }

    @Test func rsv1OnAContinuationWithDeflate() {
        var connection = server(deflate: DeflateParameters())
        let events = feed(&connection, clientFrame(0x41, [0xF2, 0x48, 0xCD]) + clientFrame(0xC0, [0xC9, 0xC9, 0x07, 0x00]))
        expectFailure(events, 1002)
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func rsv1OnAControlFrameWithDeflate(raw: UInt8) {
        var connection = server(deflate: DeflateParameters())
        expectFailure(feed(&connection, clientFrame(0xC0 | raw, [])), 1002)
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func controlFrameOver125Bytes(raw: UInt8) {
        var connection = server()
        let payload = closeBody(1000) + [UInt8](repeating: 0x61, count: 124)
        expectFailure(feed(&connection, clientFrame(0x80 | raw, payload)), 1002)
    }

    @Test(arguments: [UInt8(0x8), 0x9, 0xA])
    func fragmentedControlFrame(raw: UInt8) {
        var connection = server()
        let events = feed(&connection, clientFrame(raw, []))
        expectFailure(events, 1002)
        #expect(!events.contains(.ping([])) && !events.contains(.pong([])))
    }

    @Test func nothingHappensAfterAFailure() {
        var connection = server()
        _ = feed(&connection, clientFrame(0x83, []))
        #expect(connection.state == .closed)
        #expect(feed(&connection, clientFrame(0x81, "late") + clientFrame(0x89, [])) == [])
    }

    @Test func failureCloseFrameCarriesTheReasonWithin125Bytes() {
        var connection = server()
        var events: [WebSocketConnection.Event] = []
        connection.receive(clientFrame(0x83, []), events: &events)
        guard case .send(let bytes) = events.first else {
            Issue.record("no close frame queued: \(events.map(Ev.init))")
            return
        }
        #expect(bytes[0] == 0x88)
        #expect(bytes[1] & 0x80 == 0, "server frames are not masked")
        #expect(Int(bytes[1]) == bytes.count - 2 && bytes.count - 2 <= 125)
        #expect(Array(bytes[2..<4]) == [0x03, 0xEA])
    }

    @Test func encodeTextAndBinaryAsServerAreUnmasked() {
        var connection = server()
        #expect(connection.encodeText(Array("Hello".utf8)) == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        #expect(connection.encodeBinary([1, 2]) == [0x82, 0x02, 0x01, 0x02])
    }

    @Test func encodePingCutsThePayloadTo125Bytes() {
        var connection = server()
        let frame = connection.encodePing([UInt8](repeating: 7, count: 300))
        #expect(Ev.decodeSend(frame) == .send(opcode: 0x9, payload: [UInt8](repeating: 7, count: 125), masked: false))
    }
}
