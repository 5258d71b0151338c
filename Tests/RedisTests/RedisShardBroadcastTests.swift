import Testing
@testable import Redis

/// The sans-IO half of broadcasting on every master: which shard channels, and which copy
/// of an event counts.
@Suite struct RedisShardBroadcastTests {
    private func entry(_ start: Int64, _ end: Int64, port: Int64) -> RedisReply {
        .array([.integer(start), .integer(end), .array([.string(Array("127.0.0.1".utf8)), .integer(port)])])
    }

    @Test func oneChannelInEachBlockOfSlotsTheSameOnEveryNode() {
        let broadcast = RedisShardBroadcast(prefix: "chat:bus:")
        #expect(broadcast.channels.count == 64)
        #expect(Set(broadcast.channels).count == 64)
        for (index, channel) in broadcast.channels.enumerated() {
            #expect(channel.hasPrefix("chat:bus:{"))
            #expect(RedisClusterSlot.slot(forKey: channel) / 256 == index, "\(channel)")
        }
        #expect(RedisShardBroadcast(prefix: "chat:bus:").channels == broadcast.channels)
    }

    @Test func everyMasterOfAUsualSlotMapGetsOneChannel() throws {
        let broadcast = RedisShardBroadcast(prefix: "chat:bus:")
        let three = try RedisClusterTopology.parse(slotsReply: .array([
            entry(0, 5460, port: 7000), entry(5461, 10922, port: 7001), entry(10923, 16383, port: 7002),
        ]), askedHost: "127.0.0.1")
        let chosen = broadcast.channels(oneForEachMasterOf: three)
        #expect(chosen.uncovered.isEmpty)
        #expect(chosen.channels.map { three.master(forSlot: RedisClusterSlot.slot(forKey: $0))?.port } == [7000, 7001, 7002])
        // A master holding a few scattered slots owns no channel: it is named, not skipped silently.
        let odd = try RedisClusterTopology.parse(slotsReply: .array([
            entry(0, 99, port: 7000), entry(100, 120, port: 7001), entry(121, 16383, port: 7000),
        ]), askedHost: "127.0.0.1")
        let partial = broadcast.channels(oneForEachMasterOf: odd)
        #expect(partial.channels.count == 1)
        #expect(partial.uncovered.map(\.port) == [7001])
    }

    @Test func theFirstCopyCountsInWhateverOrderTheMastersDeliver() {
        var copies = RedisBroadcastCopies()
        func first(_ origin: String, _ number: UInt64) -> Bool { copies.isFirst(origin: origin, number: number) }
        // Three masters; event 2 failed on the first one and comes later from another.
        #expect(first("a", 1))
        #expect(first("a", 3))
        #expect(!first("a", 1))
        #expect(first("a", 2), "older than the highest, not seen yet: first")
        #expect(!first("a", 2))
        #expect(!first("a", 3))
        #expect(first("b", 1), "origins count apart")
    }

    @Test func theWindowIsBoundedAndAncientNumbersCountAsSeen() {
        var copies = RedisBroadcastCopies()
        func first(_ origin: String, _ number: UInt64) -> Bool { copies.isFirst(origin: origin, number: number) }
        let top = RedisBroadcastCopies.window * 3
        for n in stride(from: 1, through: top, by: 1) where n % 2 == 1 { _ = first("a", n) }
        #expect(!first("a", 2), "far below the window: counted as seen")
        #expect(first("a", top - 2), "inside the window and unseen")
        #expect(!first("a", top - 1), "inside the window and seen")
    }

    @Test func originsAreBoundedAndTheStalestIsForgotten() {
        var copies = RedisBroadcastCopies()
        func first(_ origin: String, _ number: UInt64) -> Bool { copies.isFirst(origin: origin, number: number) }
        #expect(first("live", 1))
        var allFirst = true
        for run in 0..<(RedisBroadcastCopies.maxOrigins * 2) {
            allFirst = allFirst && first("restart-\(run)", 1)
            if run % 100 == 0 { _ = first("live", UInt64(run + 2)) }
        }
        #expect(allFirst)
        #expect(copies.originCount == RedisBroadcastCopies.maxOrigins)
        #expect(!first("live", 1), "heard recently: still remembered")
        #expect(first("restart-0", 1), "the stalest were forgotten")
    }
}
