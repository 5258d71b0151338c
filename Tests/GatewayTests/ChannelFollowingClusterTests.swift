import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// A node hears a channel's stream only while a member holds a session on it (issue 30):
/// a node without one receives none of the channel's events, a member who connects there
/// later sees the channel as it is (newest message, unread count) and then hears it live,
/// and once the last such member left and the grace passed, Redis no longer sends the
/// channel to that node.
private extension Range<Int> {
    func asyncMap<T>(_ transform: (Int) async throws -> T) async rethrows -> [T] {
        var values: [T] = []
        for index in self { values.append(try await transform(index)) }
        return values
    }
}

@Suite(.enabled(if: PostgresTestDatabase.isAvailable && RedisTestServer.isAvailable,
                "needs CHAT_TEST_POSTGRES_URL and redis-server"), .serialized)
struct ChannelFollowingClusterTests {
    /// Subscribers of `topic` on the cluster's Redis (`PUBSUB NUMSUB`; on a Redis Cluster
    /// `PUBSUB SHARDNUMSUB` summed over the masters), read with redis-cli.
    private static func subscribers(_ cluster: TestCluster, _ topic: String) throws -> Int {
        if let sharded = cluster.sharded {
            return try sharded.masterPorts().reduce(0) { sum, port in
                let lines = try sharded.cli(port, "PUBSUB", "SHARDNUMSUB", topic).split(separator: "\n")
                return sum + (lines.count >= 2 ? Int(lines[1].trimmingCharacters(in: .whitespaces)) ?? -1 : -1)
            }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-p", String(cluster.redis.port), "PUBSUB", "NUMSUB", topic]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let lines = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        return lines.count >= 2 ? Int(lines[1].trimmingCharacters(in: .whitespaces)) ?? -1 : -1
    }

    private static func streamEventsIn(_ cluster: TestCluster, _ node: Int) async throws -> Double {
        try await cluster.metric(node, "chat_bus_stream_events_received_total")
    }

    @Test(arguments: TestCluster.RedisKind.available)
    func aNodeHearsAChannelOnlyWhileOneOfItsMembersIsConnectedThere(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await TestCluster.start(nodes: 3, kind: kind, configure: { $0.cluster.followGraceMs = 200 })
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        _ = try await cluster.nodes[2].connect("carol")
        // dave is a member who is not connected yet; carol (node 3) is not a member.
        _ = try await cluster.nodes[0].connect("dave")
        let channel = try await TestCluster.group(by: alice, with: ["bob", "dave"], name: "followed")
        let topic = ClusterBus.topic(of: channel)
        try await TestCluster.eventually("nodes 1 and 2 (and dave's node 1) hear the channel") {
            try Self.subscribers(cluster, topic) == 2
        }
        // Counted on the channels' streams: control events (the connects' presence, profiles)
        // reach every node, node 3 too, and may still arrive during the sends.
        let before = try await (0..<3).asyncMap { try await Self.streamEventsIn(cluster, $0) }
        for n in 1...30 { _ = try alice.send(channel, "m\(n)") }
        for _ in 1...30 { _ = try bob.nextEvent("message.new") }
        let after = try await (0..<3).asyncMap { try await Self.streamEventsIn(cluster, $0) }
        #expect(after[2] == before[2], "node 3 follows no channel of the 30 messages")
        #expect(after[0] - before[0] >= 30 && after[1] - before[1] >= 30, "nodes 1 and 2 hear each of them: \(before) → \(after)")

        // dave connects to node 3: the channel is read there first, then heard live.
        var dave: RawChatClient! = try await cluster.nodes[2].connect("dave")
        #expect(try Self.subscribers(cluster, topic) == 3)
        let listed = try dave.ok("channel.list")
        let entry = (listed["channels"] as? [[String: Any]])?.first { $0["id"] as? String == channel }
        #expect((entry?["lastMessage"] as? [String: Any])?["seq"] as? Int == 30)
        #expect(entry?["unreadCount"] as? Int == 30)
        _ = try alice.send(channel, "live")
        let live = try dave.nextEvent("message.new")
        #expect((live["data"] as? [String: Any])?["seq"] as? Int == 31)

        // dave leaves node 3; after the grace Redis stops sending the channel there.
        dave = nil  // closes its socket
        try await Task.sleep(for: .milliseconds(100))
        cluster.nodes[2].clock.advance(by: 1_000)
        try await TestCluster.eventually("node 3 unsubscribed after the grace") { try Self.subscribers(cluster, topic) == 2 }
        await cluster.end()
    }

    /// Typing travels on the channel's stream: the nodes of its members hear it, a node
    /// without one does not, and the members get it as before.
    @Test(arguments: TestCluster.RedisKind.available)
    func typingReachesOnlyTheNodesOfTheChannelsMembers(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await TestCluster.start(nodes: 3, kind: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        _ = try await cluster.nodes[2].connect("carol")
        let channel = try await TestCluster.group(by: alice, with: ["bob"], name: "typed")
        try await TestCluster.eventually("nodes 1 and 2 hear the channel") {
            try Self.subscribers(cluster, ClusterBus.topic(of: channel)) == 2
        }
        func typingIn(_ node: Int) async throws -> Double {
            try await cluster.metric(node, "chat_bus_typing_received_total")
        }
        let before = try await (0..<3).asyncMap { try await typingIn($0) }
        _ = try alice.ok("typing.start", ["channelId": channel])
        let event = try bob.nextEvent("typing.start")
        #expect((event["data"] as? [String: Any])?["userId"] as? String == "alice")
        _ = try alice.ok("typing.stop", ["channelId": channel])
        _ = try bob.nextEvent("typing.stop")
        let after = try await (0..<3).asyncMap { try await typingIn($0) }
        #expect(after[1] - before[1] == 2, "node 2 heard both changes: \(before) → \(after)")
        #expect(after[2] == before[2], "node 3, with no member of the channel, heard none")
        await cluster.end()
    }

    @Test(arguments: TestCluster.RedisKind.available)
    func aMemberAddedOnAnotherNodeHearsEveryMessageFromItsJoinOn(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await TestCluster.start(nodes: 2, kind: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        let erin = try await cluster.nodes[1].connect("erin")
        let channel = try await TestCluster.group(by: alice, with: [], name: "join")
        for n in 1...5 { _ = try alice.send(channel, "before \(n)") }
        // Invited, then at once ten more messages: node 2 reads the channel meanwhile and
        // must tell erin each of them, in order, once.
        _ = try alice.ok("channel.invite", ["channelId": channel, "userIds": ["erin"]])
        for n in 1...10 { _ = try alice.send(channel, "after \(n)") }
        var seqs: [Int] = []
        while seqs.count < 10 {
            let event = try erin.nextEvent("message.new")
            seqs.append((event["data"] as? [String: Any])?["seq"] as? Int ?? 0)
        }
        #expect(seqs == Array(6...15))
        #expect(try erin.expectNoEvent("message.new"))
        await cluster.end()
    }
}
