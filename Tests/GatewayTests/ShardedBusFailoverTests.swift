import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// PROTOCOL.md §13 faults on a Redis Cluster: the master that carries a channel's stream is
/// killed and its replica takes over. Sends meanwhile are stored and answered, `/readyz`
/// comes back on every node, the other node's client resyncs and finds every message in
/// history, and the channel is heard live again through the promoted replica.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable && RedisTestCluster.isAvailable,
                "needs CHAT_TEST_POSTGRES_URL, redis-server and redis-cli"), .serialized)
struct ShardedBusFailoverTests {
    @Test func aMasterKilledUnderAChannelFailsOverAndNothingIsLost() async throws {
        let cluster = try await TestCluster.start(nodes: 2, kind: .sharded)
        let redis = try #require(cluster.sharded)
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channel = try await TestCluster.group(by: alice, with: ["bob"], name: "failover")
        _ = try bob.nextEvent("channel.updated")
        _ = try alice.send(channel, "before")
        #expect(((try bob.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "before")

        // The cluster's commands block: off the test pool, as everything that waits on redis-cli.
        let topic = ClusterBus.topic(of: channel)
        let (master, replica) = try await offThePool { () -> (Int?, Int?) in
            let slot = Int(try redis.cli(redis.runningPorts[0], "CLUSTER", "KEYSLOT", topic))
            let master = try slot.flatMap { try redis.master(ofSlot: $0) }
            return (master, try master.flatMap { try redis.replica(of: $0) })
        }
        let killed = try #require(master)
        let promoted = try #require(replica)
        try await offThePool { redis.kill(killed) }
        var seqs: [Int] = []
        for n in 1...5 {
            seqs.append(try alice.send(channel, "during \(n)")["seq"] as? Int ?? 0)
        }
        #expect(seqs == Array(2...6), "every send while the master is gone is stored and answered")
        let tookOver = try await offThePool {
            redis.wait(seconds: 20) { (try? redis.cli(promoted, "ROLE"))?.hasPrefix("master") == true }
        }
        #expect(tookOver, "the replica took over")
        try await TestCluster.eventually("both nodes ready again", seconds: 20) {
            cluster.nodes.allSatisfy { $0.server.router.chat?.bus?.isReachable == true }
        }
        let resync = try bob.nextEvent("session.resync")
        #expect((resync["data"] as? [String: Any])?["channelIds"] as? [String] == [channel])
        let texts = try bob.fullHistory(channel).map { $0["text"] as? String ?? "" }
        #expect(texts == ["before"] + (1...5).map { "during \($0)" })

        _ = try alice.send(channel, "after")
        var live: [String] = []
        while live.last != "after" && live.count < 10 {
            live.append(((try bob.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String ?? "")
        }
        #expect(live.last == "after", "heard live through the promoted replica: \(live)")
        await cluster.end()
    }
}
