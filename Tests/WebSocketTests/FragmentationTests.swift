import Testing
@testable import WebSocket

@Suite struct FragmentationTests {
    @Test func textInThreeFragmentsWithAnInterleavedPing() {
        var connection = server()
        let bytes = clientFrame(0x01, "Hel", key: [1, 2, 3, 4])
            + clientFrame(0x00, "lo, ", key: [5, 6, 7, 8])
            + clientFrame(0x89, "p", key: [9, 10, 11, 12])
            + clientFrame(0x80, "world", key: [13, 14, 15, 16])
        #expect(feed(&connection, bytes) == [
            .send(opcode: 0xA, payload: Array("p".utf8), masked: false),
            .ping(Array("p".utf8)),
            .text("Hello, world"),
        ])
    }

    @Test func rfcFragmentedTextToAClient() {
        var connection = client()
        #expect(feed(&connection, [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]) == [.text("Hello")])
    }

    @Test func binaryFragmentsWithEmptyPieces() {
        var connection = server()
        let bytes = clientFrame(0x02, [1, 2]) + clientFrame(0x00, []) + clientFrame(0x8A, [0xFF]) + clientFrame(0x80, [3])
        #expect(feed(&connection, bytes) == [.pong([0xFF]), .binary([1, 2, 3])])
    }

    @Test func multiByteCharacterSplitAcrossFragments() {
        var connection = server()
        let euro: [UInt8] = [0xE2, 0x82, 0xAC]
        let bytes = clientFrame(0x01, [0x61, euro[0]]) + clientFrame(0x00, [euro[1]]) + clientFrame(0x80, [euro[2], 0x62])
        #expect(feed(&connection, bytes) == [.text("a€b")])
    }

    @Test func noMessageBeforeTheFinalFragment() {
        var connection = server()
        #expect(feed(&connection, clientFrame(0x01, "Hel") + clientFrame(0x00, "lo")) == [])
        #expect(feed(&connection, clientFrame(0x80, "!")) == [.text("Hello!")])
    }

    @Test func continuationWithoutAStart() {
        var connection = server()
        expectFailure(feed(&connection, clientFrame(0x80, "lo")), 1002)
        var unfinished = server()
        expectFailure(feed(&unfinished, clientFrame(0x00, "lo")), 1002)
    }

    @Test func continuationAfterACompletedMessage() {
        var connection = server()
        let events = feed(&connection, clientFrame(0x81, "done") + clientFrame(0x80, "more"))
        #expect(events.first == .text("done"))
        expectFailure(events, 1002)
    }

    @Test(arguments: [UInt8(0x01), 0x81, 0x02, 0x82])
    func newMessageWhileFragmented(first: UInt8) {
        var connection = server()
        let events = feed(&connection, clientFrame(0x01, "Hel") + clientFrame(first, "new"))
        expectFailure(events, 1002)
        #expect(messages(events).isEmpty)
    }
}
