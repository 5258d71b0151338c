import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// PROTOCOL.md §16 across two nodes (§13): a ban, a shadow ban or a freeze made on one node
/// is in force on the other from the moderator's reply on, and what the moderation state is
/// reaches every node.
@Suite("Moderation across nodes", .serialized,
       .enabled(if: PostgresTestDatabase.isAvailable && RedisTestServer.isAvailable, "PostgreSQL or Redis is missing"))
struct ModerationClusterTests {
    static func run(nodes: Int = 2, on kind: TestCluster.RedisKind = .single,
                    _ body: (TestCluster) async throws -> Void) async throws {
        let cluster = try await TestCluster.start(nodes: nodes, kind: kind)
        do {
            try await body(cluster)
        } catch {
            await cluster.end()
            throw error
        }
        await cluster.end()
    }

    @Test("60 trials: after the moderator's reply on node 1, the user's next send on node 2 is banned (plain: refused; shadow: heard by nobody)",
          arguments: TestCluster.RedisKind.available)
    func aBanHoldsAcrossNodesFromItsReplyOn(on kind: TestCluster.RedisKind) async throws {
        try await Self.run(on: kind) { cluster in
            let alice = try await cluster.nodes[0].connect("alice")
            let bob = try await cluster.nodes[1].connect("bob")
            let carol = try await cluster.nodes[1].connect("carol")
            let id = try await TestCluster.group(by: alice, with: ["bob", "carol"], name: "bans")
            _ = try bob.takeEvents("channel.updated")
            _ = try carol.takeEvents("channel.updated")
            // Seconds of blocking socket calls: on a thread of their own, not the test pool's.
            let leaks = try await offThePool { () -> [String] in
                var leaks: [String] = []
                for trial in 0..<60 {
                    if trial % 2 == 0 {
                        _ = try alice.ok("channel.ban", ["channelId": id, "userId": "bob", "shadow": true])
                        _ = try bob.send(id, "shadowed \(trial)")
                        _ = try alice.ok("channel.unban", ["channelId": id, "userId": "bob"])
                    } else {
                        _ = try alice.ok("channel.ban", ["channelId": id, "userId": "bob"])
                        let code = try bob.errorCode("message.send", ["channelId": id, "text": "banned \(trial)"])
                        if code != "ERR_CHANNEL_NOT_FOUND" { leaks.append("trial \(trial): \(code ?? "ok")") }
                        _ = try alice.ok("channel.unban", ["channelId": id, "userId": "bob"])
                        _ = try alice.ok("channel.invite", ["channelId": id, "userIds": ["bob"]])
                    }
                    _ = try bob.send(id, "marker \(trial)")
                    for (name, listener) in [("alice on node 1", alice), ("carol on node 2", carol)] {
                        let event: [String: Any]
                        do {
                            event = try listener.nextEvent("message.new")
                        } catch {
                            throw TrialFailed(description: "trial \(trial), \(name): \(error)")
                        }
                        let seen = (event["data"] as? [String: Any])?["text"] as? String
                        if seen != "marker \(trial)" {
                            leaks.append("trial \(trial): \(seen ?? "nil")")
                            _ = try listener.nextEvent("message.new")
                        }
                    }
                }
                return leaks
            }
            #expect(leaks.isEmpty, "\(leaks.count) of 60: \(leaks.prefix(5))")
            let texts = try alice.fullHistory(id).texts
            #expect(!texts.contains { $0.hasPrefix("shadowed") || $0.hasPrefix("banned") })
            #expect(texts.filter { $0.hasPrefix("marker") }.count == 60)
        }
    }

    struct TrialFailed: Error, CustomStringConvertible {
        let description: String
    }

    @Test("slow mode counts every node: a member's second send through another node within the interval is refused")
    func slowModeCountsEveryNode() async throws {
        try await Self.run { cluster in
            let alice = try await cluster.nodes[0].connect("alice")
            let bobHere = try await cluster.nodes[0].connect("bob", query: "&device=a")
            let bobThere = try await cluster.nodes[1].connect("bob", query: "&device=b")
            let id = try await TestCluster.group(by: alice, with: ["bob"], name: "slow")
            _ = try alice.ok("channel.update", ["channelId": id, "slowModeSeconds": 60])
            _ = try bobHere.send(id, "first")
            let refused = try bobThere.request("message.send", ["channelId": id, "text": "second, elsewhere"])
            let error = refused["error"] as? [String: Any]
            #expect(error?["code"] as? String == "ERR_SLOW_MODE", "\(refused)")
            #expect((error?["retryAfterMs"] as? Int ?? 0) > 50_000)
            _ = try alice.send(id, "owners are not slowed")
            _ = try alice.send(id, "at all")
        }
    }

    @Test("roles, freeze, mutes and flags made on one node hold on the other")
    func stateReachesEveryNode() async throws {
        try await Self.run { cluster in
            let alice = try await cluster.nodes[0].connect("alice")
            let bob = try await cluster.nodes[1].connect("bob")
            let id = try await TestCluster.group(by: alice, with: ["bob"], name: "state")
            _ = try alice.ok("channel.update", ["channelId": id, "frozen": true])
            #expect(try bob.errorCode("message.send", ["channelId": id, "text": "x"]) == "ERR_CHANNEL_FROZEN")
            _ = try alice.ok("channel.setRole", ["channelId": id, "userId": "bob", "role": "moderator"])
            _ = try bob.send(id, "a moderator speaks")
            #expect(try bob.ok("channel.get", ["channelId": id])["roles"] as? [String: String] == ["alice": "owner", "bob": "moderator"])
            _ = try bob.ok("channel.update", ["channelId": id, "frozen": false])
            _ = try alice.ok("message.flag", ["channelId": id, "seq": 1, "reason": "from node 1"])
            let flags = try await cluster.nodes[1].admin("GET", "/v1/admin/flags")
            #expect((flags.json["flags"] as? [[String: Any]])?.first?["reason"] as? String == "from node 1")
        }
    }
}
