import Testing
@testable import WebSocket

@Suite struct TextValidationTests {
    @Test func validMultiByteText() {
        var connection = server()
        let text = "Grüße, κόσμε, 日本, 🎉"
        #expect(feed(&connection, clientFrame(0x81, text)) == [.text(text)])
    }

    @Test(arguments: [
        [UInt8(0xC0), 0x80], [0xE0, 0x80, 0xAF], [0xF0, 0x80, 0x80, 0xAF],  // overlongs
        [0xED, 0xA0, 0x80],  // surrogate
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0x80], [0xFE], [0xFF],
    ])
    func invalidText(bad: [UInt8]) {
        var connection = server()
        let events = feed(&connection, clientFrame(0x81, Array("ok ".utf8) + bad + Array(" tail".utf8)))
        expectFailure(events, 1007)
        #expect(messages(events).isEmpty)
    }

    @Test(arguments: [[UInt8(0xC2)], [0xE2, 0x82], [0xF0, 0x9F, 0x8E]])
    func truncatedAtTheEndOfTheMessage(tail: [UInt8]) {
        var single = server()
        expectFailure(feed(&single, clientFrame(0x81, Array("abc".utf8) + tail)), 1007)
        var fragmented = server()
        let events = feed(&fragmented, clientFrame(0x01, Array("abc".utf8)) + clientFrame(0x80, tail))
        expectFailure(events, 1007)
    }

    @Test func binaryIsNotValidated() {
        var connection = server()
        #expect(feed(&connection, clientFrame(0x82, [0xFF, 0xED, 0xA0, 0x80, 0xC2])) == [.binary([0xFF, 0xED, 0xA0, 0x80, 0xC2])])
    }

    @Test func failsFastInTheFirstFragment() {
        var connection = server()
        // Only the first fragment is fed; the final one never arrives.
        let events = feed(&connection, clientFrame(0x01, Array("fine so far ".utf8) + [0xED, 0xA0, 0x80]))
        expectFailure(events, 1007)
        #expect(connection.state == .closed)
    }

    @Test func failsFastInsideAFrameWhosePayloadHasNotArrived() {
        var connection = server()
        // The header announces 1000 bytes; only the first 20 payload bytes arrive, with a bad byte among them.
        var payload = [UInt8](repeating: 0x61, count: 1000)
        payload[10] = 0xC0
        let frame = clientFrame(0x81, payload)
        let headerLength = 2 + 2 + 4
        let events = feed(&connection, Array(frame.prefix(headerLength + 20)))
        expectFailure(events, 1007)
    }

    @Test func noEarlyFailureOnAValidPrefixOfACharacter() {
        var connection = server()
        // A partial character at the end of a partial read is fine until more bytes come.
        let frame = clientFrame(0x81, Array("ab€".utf8))
        #expect(feed(&connection, Array(frame.prefix(frame.count - 1))) == [])
        #expect(feed(&connection, Array(frame.suffix(1))) == [.text("ab€")])
    }
}
