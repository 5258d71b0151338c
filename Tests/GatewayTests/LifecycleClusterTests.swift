import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// PROTOCOL.md §15 across two nodes (§13): changes made on one node reach the other node's
/// connections live, in order, filtered there by the blocks as they stand.
@Suite("Lifecycle across nodes", .serialized,
       .enabled(if: PostgresTestDatabase.isAvailable && RedisTestServer.isAvailable, "PostgreSQL or Redis is missing"))
struct LifecycleClusterTests {
    @Test("edits, reactions and replies on node 1 reach node 2 live; alice's block on node 2 holds for bob's reaction on node 1")
    func liveAcrossNodes() async throws {
        let cluster = try await TestCluster.start(nodes: 2)
        do {
            try await Self.check(cluster)
        } catch {
            await cluster.end()
            throw error
        }
        await cluster.end()
    }

    static func check(_ cluster: TestCluster) async throws {
        let bob = try await cluster.nodes[0].connect("bob")
        let alice = try await cluster.nodes[1].connect("alice")
        let carol = try await cluster.nodes[1].connect("carol")
        let id = try bob.createGroup(["alice", "carol"])
        try bob.send(id, "one")
        _ = try alice.nextEvent("message.new")
        _ = try carol.nextEvent("message.new")
        _ = try bob.ok("message.update", ["channelId": id, "seq": 1, "text": "one!"])
        let edit = try alice.eventData("message.updated")
        #expect((edit["message"] as? [String: Any])?["text"] as? String == "one!")
        _ = try carol.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "+1"])
        #expect(try alice.eventData("reaction.added")["reactions"] as? [String: Int] == ["+1": 1])
        #expect(try bob.eventData("reaction.added")["reactions"] as? [String: Int] == ["+1": 1])
        try carol.send(id, "re", ["parentSeq": 1])
        _ = try bob.nextEvent("message.new")
        #expect(((try bob.eventData("message.updated"))["message"] as? [String: Any])?["replyCount"] as? Int == 1)

        // alice hides bob on a second connection of hers on node 2: bob's reaction on node 1 to
        // carol's message reaches her plain connection but not that one, whose counts leave him out.
        let hiding = try await cluster.nodes[1].connect("alice", query: "&hideBlocked=1")
        try carol.send(id, "carol's")
        _ = try alice.nextEvent("message.new")
        _ = try hiding.nextEvent("message.new")
        _ = try alice.blockResults("user.block", ["bob"])
        _ = try bob.ok("reaction.add", ["channelId": id, "seq": 3, "kind": "+1"])
        #expect(try alice.eventData("reaction.added")["reactions"] as? [String: Int] == ["+1": 1])
        _ = try carol.ok("reaction.add", ["channelId": id, "seq": 3, "kind": "🎉"])
        let seen = try hiding.eventData("reaction.added")
        #expect(seen["userId"] as? String == "carol", "bob's reaction never reached the hideBlocked connection")
        #expect(seen["reactions"] as? [String: Int] == ["🎉": 1])
        #expect(RawChatClient.reactions(try hiding.historyMessage(id, seq: 3)) == ["🎉": 1])
        #expect(RawChatClient.reactions(try alice.historyMessage(id, seq: 3)) == ["+1": 1, "🎉": 1])
        // Events about bob's own message never reach that connection, whoever causes them.
        _ = try carol.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "🎉"])
        _ = try alice.nextEvent("reaction.added")
        #expect(try hiding.expectNoEvent("reaction.added"))
        // message.changes answers the same on both nodes.
        let onOne = try await cluster.nodes[0].connect("carol")
        #expect(canonicalJSON(try onOne.allChanges(id).messages) == canonicalJSON(try carol.allChanges(id).messages))
    }
}
