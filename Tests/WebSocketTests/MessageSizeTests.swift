import Testing
@testable import WebSocket

@Suite struct MessageSizeTests {
    @Test(arguments: [UInt64(1001), 65536, 1 << 40])
    func headerOverTheLimitFailsWithoutAnyPayload(length: UInt64) {
        var connection = server(maxMessageBytes: 1000)
        let events = feed(&connection, wireHeader(0x82, length: length, mask: rfcMaskKey))
        expectFailure(events, 1009)
    }

    @Test func messageOfExactlyTheLimit() {
        var connection = server(maxMessageBytes: 1000)
        let payload = [UInt8](repeating: 0x61, count: 1000)
        #expect(feed(&connection, clientFrame(0x81, payload)) == [.text(payload)])
    }

    @Test func fragmentedMessageOverTheLimit() {
        var connection = server(maxMessageBytes: 1000)
        let chunk = [UInt8](repeating: 0x62, count: 400)
        #expect(feed(&connection, clientFrame(0x01, chunk) + clientFrame(0x00, chunk)) == [])
        // The third header brings the total to 1200: refused before its payload arrives.
        let third = clientFrame(0x80, chunk)
        let events = feed(&connection, Array(third.prefix(8)))
        expectFailure(events, 1009)
    }

    @Test func fragmentedMessageOfExactlyTheLimit() {
        var connection = server(maxMessageBytes: 1000)
        let bytes = clientFrame(0x02, [UInt8](repeating: 1, count: 600)) + clientFrame(0x80, [UInt8](repeating: 2, count: 400))
        #expect(feed(&connection, bytes) == [.binary([UInt8](repeating: 1, count: 600) + [UInt8](repeating: 2, count: 400))])
    }

    @Test func limitAppliesPerMessage() {
        var connection = server(maxMessageBytes: 1000)
        let payload = [UInt8](repeating: 3, count: 800)
        let events = feed(&connection, clientFrame(0x82, payload) + clientFrame(0x82, payload) + clientFrame(0x82, payload))
        #expect(events == [.binary(payload), .binary(payload), .binary(payload)])
    }

    @Test func controlFramesDoNotCountTowardsTheMessage() {
        var connection = server(maxMessageBytes: 100)
        let bytes = clientFrame(0x01, [UInt8](repeating: 0x61, count: 100)) + clientFrame(0x89, [UInt8](repeating: 1, count: 100))
            + clientFrame(0x80, [])
        #expect(messages(feed(&connection, bytes)) == [.text([UInt8](repeating: 0x61, count: 100))])
    }

    @Test func sixtyFourBitLengthWithTheTopBitSet() {
        var connection = server(maxMessageBytes: 1000)
        let header: [UInt8] = [0x82, 0xFF, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01] + rfcMaskKey
        expectFailure(feed(&connection, header), 1002)
    }

    @Test func hugeSixtyFourBitLengthIsTooBigAndDoesNotCrash() {
        var connection = server(maxMessageBytes: 65536)
        let events = feed(&connection, wireHeader(0x82, length: 1 << 62, mask: rfcMaskKey) + [1, 2, 3])
        expectFailure(events, 1009)
        var maxed = server(maxMessageBytes: Int.max)
        // Even with no practical limit, 2^63-1 must not trap in Int conversions.
        let longest = wireHeader(0x82, length: UInt64(Int64.max), mask: rfcMaskKey)
        #expect(feed(&maxed, longest + [1, 2, 3]) == [])
    }

    @Test func fragmentTotalNearTheTopOfTheRange() {
        var connection = server(maxMessageBytes: Int.max)
        // 10 + (2^63 - 1) passes Int.max: refused, without overflowing the running total.
        let bytes = clientFrame(0x02, [UInt8](repeating: 0, count: 10)) + wireHeader(0x00, length: UInt64(Int64.max), mask: rfcMaskKey)
        expectFailure(feed(&connection, bytes), 1009)
    }
}
