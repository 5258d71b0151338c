import Testing
@testable import Gateway

/// The events a node could not publish: kept in order, put back in front when publishing
/// them fails again, bounded with the oldest dropped and counted.
@Suite("Bus outbox")
struct BusOutboxTests {
    private static func payload(_ n: Int) -> [UInt8] { Array("e\(n)".utf8) }

    @Test func keepsOrderAcrossAFailedRepublish() {
        var outbox = BusOutbox()
        for n in 0..<3 { outbox.append(Self.payload(n)) }
        let taken = outbox.takeAll()
        #expect(taken == (0..<3).map(Self.payload) && outbox.isEmpty)
        outbox.append(Self.payload(3))  // committed while the republish was on its way
        outbox.putBack(Array(taken[1...]))
        #expect(outbox.takeAll() == [1, 2, 3].map(Self.payload))
    }

    @Test func dropsTheOldestPastItsCapacity() {
        var outbox = BusOutbox()
        for n in 0..<(BusOutbox.capacity + 5) { outbox.append(Self.payload(n)) }
        #expect(outbox.count == BusOutbox.capacity && outbox.dropped == 5)
        let all = outbox.takeAll()
        #expect(all.first == Self.payload(5) && all.last == Self.payload(BusOutbox.capacity + 4))
    }
}
