import Testing
@testable import Redis

/// `CLUSTER SLOTS` replies read into a slot map; every value from the server checked.
@Suite struct RedisClusterTopologyTests {
    private func node(_ host: RedisReply, _ port: Int64, _ id: String? = nil) -> RedisReply {
        var fields: [RedisReply] = [host, .integer(port)]
        if let id { fields.append(.string(Array(id.utf8))) }
        return .array(fields)
    }

    private func ip(_ text: String) -> RedisReply { .string(Array(text.utf8)) }

    private func entry(_ start: Int64, _ end: Int64, _ nodes: RedisReply...) -> RedisReply {
        .array([.integer(start), .integer(end)] + nodes)
    }

    /// Three masters with a replica each, as `redis-cli --cluster create` lays them out
    /// (Redis 7 adds an empty map of other endpoints to each node).
    private var threeMasters: RedisReply {
        .array([
            entry(0, 5460, node(ip("127.0.0.1"), 7000, "a"), node(ip("127.0.0.1"), 7004, "e")),
            entry(10923, 16383, node(ip("127.0.0.1"), 7002, "c"), node(ip("127.0.0.1"), 7003, "d")),
            entry(5461, 10922, .array([ip("127.0.0.1"), .integer(7001), ip("b"), .array([])]),
                  node(ip("127.0.0.1"), 7005, "f")),
        ])
    }

    @Test func slotsMapToTheirMasters() throws {
        let topology = try RedisClusterTopology.parse(slotsReply: threeMasters, askedHost: "127.0.0.1")
        #expect(topology.master(forSlot: 0)?.port == 7000)
        #expect(topology.master(forSlot: 5460)?.port == 7000)
        #expect(topology.master(forSlot: 5461) == RedisClusterNode(host: "127.0.0.1", port: 7001, id: "b"))
        #expect(topology.master(forSlot: 16383)?.port == 7002)
        #expect(topology.master(forSlot: 16384) == nil && topology.master(forSlot: -1) == nil)
        #expect(topology.masters.map(\.port) == [7000, 7002, 7001], "distinct, in the order listed")
        #expect(topology.ranges.map(\.slots.lowerBound) == [0, 5461, 10923])
        #expect(topology.ranges[0].replicas == [RedisClusterNode(host: "127.0.0.1", port: 7004, id: "e")])
        #expect(topology.coversEverySlot)
        #expect(topology.slotCount(of: RedisClusterAddress(host: "127.0.0.1", port: 7002)) == 5461)
    }

    @Test func aMovedSlotIsAssignedAlone() throws {
        var topology = try RedisClusterTopology.parse(slotsReply: threeMasters, askedHost: "127.0.0.1")
        topology.assign(slot: 100, to: RedisClusterNode(host: "127.0.0.1", port: 7002))
        topology.assign(slot: 101, to: RedisClusterNode(host: "127.0.0.1", port: 7009))
        #expect(topology.master(forSlot: 100)?.port == 7002)
        #expect(topology.master(forSlot: 101)?.port == 7009)
        #expect(topology.master(forSlot: 99)?.port == 7000)
        #expect(topology.masters.count == 4)
        topology.assign(slot: 16384, to: RedisClusterNode(host: "127.0.0.1", port: 7002))  // ignored
    }

    @Test func anEmptyOrNullHostIsTheNodeAsked() throws {
        let reply = RedisReply.array([entry(0, 16383, node(ip(""), 7000), node(.null, 7001))])
        let topology = try RedisClusterTopology.parse(slotsReply: reply, askedHost: "10.1.2.3")
        #expect(topology.master(forSlot: 7) == RedisClusterNode(host: "10.1.2.3", port: 7000))
        #expect(topology.ranges[0].replicas == [RedisClusterNode(host: "10.1.2.3", port: 7001)])
    }

    @Test func aGapLeavesSlotsWithoutAMaster() throws {
        let reply = RedisReply.array([entry(0, 99, node(ip("127.0.0.1"), 7000)), entry(200, 16383, node(ip("::1"), 7001))])
        let topology = try RedisClusterTopology.parse(slotsReply: reply, askedHost: "127.0.0.1")
        #expect(topology.master(forSlot: 150) == nil)
        #expect(topology.master(forSlot: 200)?.host == "::1")
        #expect(!topology.coversEverySlot)
        #expect(try RedisClusterTopology.parse(slotsReply: .array([]), askedHost: "x").masters.isEmpty)
    }

    @Test func anUnknownReplicaIsLeftOut() throws {
        let reply = RedisReply.array([entry(0, 16383, node(ip("127.0.0.1"), 7000), node(ip("?"), 7001))])
        #expect(try RedisClusterTopology.parse(slotsReply: reply, askedHost: "127.0.0.1").ranges[0].replicas.isEmpty)
    }

    static let malformed: [(String, RedisReply)] = {
        let good = RedisReply.array([.string(Array("127.0.0.1".utf8)), .integer(7000), .string(Array("id".utf8))])
        func entry(_ fields: RedisReply...) -> RedisReply { .array([.array(fields)]) }
        func host(_ text: String) -> RedisReply { .array([.string(Array(text.utf8)), .integer(7000)]) }
        return [
            ("an error", .error("ERR This instance has cluster support disabled")),
            ("disconnected", .disconnected),
            ("a string", .string(Array("slots".utf8))),
            ("an entry not an array", .array([.integer(1)])),
            ("an entry without master", entry(.integer(0), .integer(10))),
            ("a start past 16383", entry(.integer(16384), .integer(16384), good)),
            ("a negative start", entry(.integer(-1), .integer(10), good)),
            ("an end past 16383", entry(.integer(0), .integer(Int64.max), good)),
            ("start after end", entry(.integer(10), .integer(9), good)),
            ("a slot as a string", entry(.string(Array("0".utf8)), .integer(9), good)),
            ("port 0", entry(.integer(0), .integer(9), .array([.string(Array("127.0.0.1".utf8)), .integer(0)]))),
            ("port 65536", entry(.integer(0), .integer(9), .array([.string(Array("127.0.0.1".utf8)), .integer(65536)]))),
            ("a port as a string", entry(.integer(0), .integer(9), .array([.string(Array("127.0.0.1".utf8)), .string(Array("7000".utf8))]))),
            ("a host name", entry(.integer(0), .integer(9), host("redis.example"))),
            ("an unknown master", entry(.integer(0), .integer(9), host("?"))),
            ("a host as an integer", entry(.integer(0), .integer(9), .array([.integer(1), .integer(7000)]))),
            ("a node without port", entry(.integer(0), .integer(9), .array([.string(Array("127.0.0.1".utf8))]))),
            ("an empty id", entry(.integer(0), .integer(9), .array([.string(Array("127.0.0.1".utf8)), .integer(7000), .string([])]))),
            ("a bad replica", entry(.integer(0), .integer(9), good, .array([.string(Array("127.0.0.1".utf8)), .integer(-5)]))),
            ("overlapping ranges", .array([.array([.integer(0), .integer(100), good]), .array([.integer(100), .integer(200), good])])),
        ]
    }()

    @Test(arguments: malformed.indices)
    func malformedRepliesAreRefused(_ index: Int) {
        let (what, reply) = Self.malformed[index]
        #expect(throws: RedisClusterTopology.Failure.self, "\(what)") {
            _ = try RedisClusterTopology.parse(slotsReply: reply, askedHost: "127.0.0.1")
        }
    }
}
