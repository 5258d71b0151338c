import ChatCore
import Testing
@testable import Gateway

/// The events a node could not publish: kept in order, put back in front when publishing
/// them fails again, bounded in bytes with the oldest dropped, counted, and their channels
/// remembered for a resync.
@Suite("Bus outbox")
struct BusOutboxTests {
    private static func payload(_ n: Int) -> [UInt8] { Array("e\(n)".utf8) }

    @Test func keepsOrderAcrossAFailedRepublish() {
        var outbox = BusOutbox()
        for n in 0..<3 { outbox.append(Self.payload(n), topic: "chat:bus", scope: .channel("c\(n)")) }
        let taken = outbox.takeAll()
        #expect(taken.map(\.payload) == (0..<3).map(Self.payload) && outbox.isEmpty && outbox.byteCount == 0)
        outbox.append(Self.payload(3), topic: "chat:bus", scope: .channel("c3"))  // committed while the republish was on its way
        outbox.putBack(Array(taken[1...]))
        #expect(outbox.takeAll().map(\.payload) == [1, 2, 3].map(Self.payload))
    }

    /// 100,000 message events of 60 KiB would be 6 GB in an outbox bounded by count; in
    /// bytes it holds at most its capacity, and knows which channels lost events.
    @Test func isBoundedInBytesNotEvents() {
        let capacity = 4 << 20
        var outbox = BusOutbox(capacityBytes: capacity)
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 60 << 10)
        for n in 0..<200 { outbox.append(big, topic: "chat:bus", scope: .channel("c\(n % 7)")) }
        #expect(outbox.byteCount <= capacity)
        #expect(outbox.count == capacity / (big.count + BusOutbox.entryOverheadBytes))
        #expect(outbox.dropped == 200 - outbox.count)
        let (dropped, scope) = outbox.takeDroppedScope()
        #expect(dropped == 200 - outbox.count && !scope.everything && scope.channels == Set((0..<7).map { "c\($0)" }))
        #expect(outbox.takeDroppedScope().scope.isEmpty)
        // A block or user write lost: every channel may have missed something.
        outbox.append(big, topic: "chat:bus", scope: .all)
        for _ in 0..<100 { outbox.append(big, topic: "chat:bus", scope: .channel("c1")) }
        #expect(outbox.takeDroppedScope().scope.everything)
    }

    @Test func theScopeOfEachWrite() {
        let message = Message(id: "m1", channelID: "c9", seq: 0, senderID: "a", text: "hi", createdAt: 1)
        #expect(ResyncScope.of(.insertMessage(message)) == .channel("c9"))
        #expect(ResyncScope.of(.markRead(channelID: "c2", userID: "a", seq: 3)) == .channel("c2"))
        #expect(ResyncScope.of(.setBlock(blocker: "a", blocked: "b", isBlocked: true, at: 1)) == .all)
        var many = ResyncScope()
        for n in 0...ResyncScope.maxChannels { many.add(.channel("c\(n)")) }
        #expect(many.everything)
    }

    @Test func aResyncNoticeRoundTripsAndRefusesBadInput() {
        var scope = ResyncScope()
        scope.add(.channel("c1"))
        scope.add(.channel("c2"))
        let notice = BusResyncNotice(node: "node-1", scope: scope)
        #expect(BusResyncNotice.decode(notice.encoded()) == notice)
        #expect(BusResyncNotice.decode(BusResyncNotice(node: "n", scope: .all).encoded())?.scope.everything == true)
        #expect(BusResyncNotice.decode(Array(#"{"node":"n","channelIds":[""]}"#.utf8)) == nil)
        #expect(BusResyncNotice.decode(Array(#"{"node":"","all":true}"#.utf8)) == nil)
        #expect(BusResyncNotice.decode(Array(#"{"node":"n","channelIds":[1]}"#.utf8)) == nil)
    }
}
