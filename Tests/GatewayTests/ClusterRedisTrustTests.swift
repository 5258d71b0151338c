import Dispatch
import Foundation
import Logging
import ServiceTestSupport
import Synchronization
import Testing
@testable import Gateway

/// Issue 26, "Redis is trusted blindly", end to end: real gateway nodes on one PostgreSQL
/// database and a real redis-server, with Redis (or whoever can PUBLISH on it) misbehaving.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable && RedisTestServer.isAvailable,
                "needs CHAT_TEST_POSTGRES_URL and redis-server"), .serialized)
struct ClusterRedisTrustTests {
    private func cluster(nodes count: Int = 2, redis: RedisTestServer? = nil, redisURL: ((Int) -> String)? = nil,
                         logger: Logger = TestGateway.suiteLogger, waitForBus: Bool = true,
                         configure: @escaping (inout GatewayConfiguration) -> Void = { _ in }) async throws -> TestCluster {
        try await TestCluster.start(nodes: count, redis: redis, redisURL: redisURL, logger: logger, waitForBus: waitForBus,
                                    configure: configure)
    }

    private func eventually(_ what: String, seconds: Double = 5, _ condition: () async throws -> Bool) async throws {
        try await TestCluster.eventually(what, seconds: seconds, condition)
    }

    private func group(by creator: RawChatClient, with members: [String]) async throws -> String {
        try await TestCluster.group(by: creator, with: members, name: "trust")
    }

    private static func blockEvent(blocked: Bool, at: String) -> String {
        #"{"v":1,"node":"intruder","n":1,"write":{"kind":"block","blocker":"alice","blocked":"bob","isBlocked":\#(blocked),"at":\#(at)}}"#
    }

    /// `ZADD {chat:online} inf x`, then a presence resubscribe: every node read the snapshot
    /// and trapped converting the score (`Milliseconds(score)`). Now such entries are skipped
    /// and counted, and the nodes stay up and ready.
    @Test func anOutOfRangeOnlineScoreDoesNotTrapAResubscribe() async throws {
        let cluster = try await cluster()
        try cluster.redisCLI(["ZADD", ClusterPresence.onlineKey, "inf", "x", "-inf", "y", "1e300", "z", "1700000000000", "bad id"])
        // Every subscriber is dropped: each node resubscribes and reads the snapshot again.
        try cluster.redisCLI(["CLIENT", "KILL", "TYPE", "pubsub"])
        for (n, node) in cluster.nodes.enumerated() {
            try await eventually("node \(n + 1) resubscribed and counted the bad entries") {
                try await cluster.metric(n, #"chat_bus_payloads_rejected_total{reason="malformed"}"#) >= 4
            }
            try await eventually("node \(n + 1) ready") { node.server.router.chat?.bus?.isReachable == true }
            #expect(try await node.http("GET", "/healthz").status == 200)
        }
        await cluster.end()
    }

    /// Anyone who can PUBLISH on `chat:bus` could unblock a pair on every node. With
    /// `cluster.busSecret` a payload without the right HMAC is dropped and counted.
    @Test func anUnsignedBusEventIsDroppedWhenTheBusHasASecret() async throws {
        let cluster = try await cluster(configure: { $0.cluster.busSecret = "a-bus-secret-of-at-least-32-bytes!!" })
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channelID = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        let now = cluster.nodes[0].clock.now()
        let forged = Self.blockEvent(blocked: false, at: "\(now + 1)")
        try cluster.redisCLI(["PUBLISH", "chat:bus", forged])
        try cluster.redisCLI(["PUBLISH", "chat:bus", String(repeating: "0", count: 64) + " " + forged])
        try cluster.redisCLI(["PUBLISH", "chat:presence", "1 \(now) mallory"])
        for n in 0..<2 {
            try await eventually("node \(n + 1) counted the forgeries") {
                try await cluster.metric(n, #"chat_bus_payloads_rejected_total{reason="signature"}"#) >= 3
            }
        }
        _ = try bob.send(channelID, "still blocked?")
        #expect(try alice.expectNoEvent("message.new"))
        // Signed traffic still flows: the unblock made on node 1 reaches node 2's sender.
        _ = try alice.ok("user.unblock", ["userIds": ["bob"]])
        _ = try bob.send(channelID, "after the unblock")
        #expect(((try alice.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "after the unblock")
        // Typing, on the channel's stream, is signed too: a forged change is dropped, a real one arrives.
        let forgedTyping = #"{"node":"node-9","started":true,"channelId":"\#(channelID)","userId":"mallory"}"#
        try cluster.redisCLI(["PUBLISH", ClusterBus.topic(of: channelID), forgedTyping])
        try await eventually("node 1 counted the forged typing") {
            try await cluster.metric(0, #"chat_bus_payloads_rejected_total{reason="signature"}"#) >= 4
        }
        _ = try bob.ok("typing.start", ["channelId": channelID])
        #expect(((try alice.nextEvent("typing.start"))["data"] as? [String: Any])?["userId"] as? String == "bob")
        await cluster.end()
    }

    /// Without a secret, every field is still checked like a client's: a block dated before
    /// the epoch, a user id a token could not carry, a seq past 2^53 are dropped and counted,
    /// not applied.
    @Test func aBusEventWithAFieldOutOfRangeIsDroppedAndCounted() async throws {
        let cluster = try await cluster()
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channelID = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        let forgeries = [
            Self.blockEvent(blocked: true, at: "-5"),
            Self.blockEvent(blocked: true, at: "99999999999999999"),
            #"{"v":1,"node":"intruder","n":2,"write":{"kind":"block","blocker":"alice","blocked":"bob b","isBlocked":true,"at":1}}"#,
            #"{"v":1,"node":"","n":3,"write":{"kind":"block","blocker":"alice","blocked":"bob","isBlocked":true,"at":1}}"#,
            #"{"v":1,"node":"intruder","n":4,"write":{"kind":"read","channelId":"\#(channelID)","userId":"alice","seq":9007199254740993}}"#,
        ]
        for forged in forgeries { try cluster.redisCLI(["PUBLISH", "chat:bus", forged]) }
        for n in 0..<2 {
            try await eventually("node \(n + 1) counted the malformed events") {
                try await cluster.metric(n, #"chat_bus_payloads_rejected_total{reason="malformed"}"#) >= Double(forgeries.count)
            }
        }
        _ = try bob.send(channelID, "not blocked")
        #expect(((try alice.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "not blocked")
        await cluster.end()
    }

    /// A rate key written by someone else (`SET chat:rate:alice inf`) made the shared rate
    /// script answer "limited, retry in -9223372036854775808 ms". Such an answer is not
    /// believed: the node's own bucket decides and the answer is counted as malformed.
    @Test func aForgedRateKeyDoesNotDecideTheRate() async throws {
        let cluster = try await cluster(nodes: 1, configure: { chat in
            chat.limits.userMessagesPerSecond = 5
            chat.limits.userMessageBurst = 5
        })
        let alice = try await cluster.nodes[0].connect("alice")
        let channelID = try await group(by: alice, with: [])
        for value in ["inf", "9e30"] {
            try cluster.redisCLI(["SET", SharedRateLimit.key("alice"), value])
            let reply = try alice.request("message.send", ["channelId": channelID, "text": "rate key \(value)"])
            #expect(reply["type"] as? String == "ok", "\(reply)")
        }
        #expect(try await cluster.metric(0, #"chat_bus_payloads_rejected_total{reason="malformed"}"#) >= 2)
        await cluster.end()
    }

    /// A paused Redis (SIGSTOP: connections open, nothing answered): every send answers
    /// within the command timeout (ok, stored, or ERR_INTERNAL): it waits on Redis at most
    /// half of it, at one step (the shared rate or its echo), `/readyz` turns 503,
    /// and once Redis answers again `/readyz` is 200 and the clients resync; no
    /// acknowledged message is lost.
    @Test func aPausedRedisFailsFastTurnsReadyz503AndResumesWithResync() async throws {
        let timeoutMs = 1_000
        let cluster = try await cluster(configure: { $0.cluster.commandTimeoutMs = timeoutMs })
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channelID = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        cluster.redis.pause()
        var acknowledged: [String] = []
        var slowest = 0.0
        for n in 0..<6 {
            let started = DispatchTime.now().uptimeNanoseconds
            let reply = try alice.request("message.send", ["channelId": channelID, "text": "paused \(n)"])
            let took = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            slowest = max(slowest, took)
            if reply["type"] as? String == "ok" {
                acknowledged.append("paused \(n)")
            } else {
                #expect((reply["error"] as? [String: Any])?["code"] as? String == "ERR_INTERNAL", "\(reply)")
            }
        }
        #expect(slowest < Double(timeoutMs) / 1000, "slowest send answered after \(slowest) s")
        // Both nodes notice, node 2 with nothing to send (its keepalive PING goes unanswered).
        for node in cluster.nodes {
            try await eventually("readyz 503", seconds: 6) { try await node.http("GET", "/readyz").status == 503 }
        }
        // One connection going unanswered is enough for 503; paused long enough for every
        // connection's keepalive (at most half the timeout apart) to go unanswered too, both
        // subscriptions are lost, so both nodes' clients must resync. (A subscription that
        // outlived a short pause missed nothing, and its clients are not asked to resync.)
        try await Task.sleep(for: .milliseconds(2 * timeoutMs))
        cluster.redis.resume()
        for node in cluster.nodes {
            try await eventually("readyz 200 again", seconds: 10) { try await node.http("GET", "/readyz").status == 200 }
        }
        for client in [alice, bob] {
            let resync = try client.nextEvent("session.resync")
            #expect((resync["data"] as? [String: Any])?["channelIds"] as? [String] == [channelID])
        }
        let history = try bob.ok("message.history", ["channelId": channelID, "afterSeq": 0])
        let texts = (history["messages"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        #expect(Set(acknowledged).isSubset(of: Set(texts)), "acknowledged \(acknowledged), stored \(texts)")
        await cluster.end()
    }

    /// A wrong password: the node says why it cannot reach Redis (Redis's WRONGPASS) and
    /// stays unready, and no log line holds the password, whatever the line.
    @Test func aRefusedRedisPasswordIsLoggedWithoutIt() async throws {
        let redis = try RedisTestServer(arguments: ["--requirepass", "the-right-password"])
        let lines = LogLines()
        let cluster = try await cluster(nodes: 1, redis: redis, redisURL: { "redis://:redis-pw-never-logged@127.0.0.1:\($0)/1" },
                                        logger: lines.logger, waitForBus: false)
        try await eventually("the refusal logged") {
            lines.all.contains { $0.contains("bus.reconnect") && $0.contains("AUTH refused") }
        }
        try await eventually("readyz 503") { try await cluster.nodes[0].http("GET", "/readyz").status == 503 }
        #expect(!lines.all.isEmpty && lines.all.allSatisfy { !$0.contains("redis-pw-never-logged") })
        await cluster.end()
    }

    /// `rediss://` with a password and a database: the nodes verify Redis's certificate
    /// against `cluster.redisCaFile`, AUTH, SELECT, and carry messages between them.
    @Test func aClusterOverVerifiedTLSWithAPassword() async throws {
        let authority = try TestCertificateAuthority(name: "cluster")
        let pair = try authority.serverCertificate(named: "redis", subjectAltName: "IP:127.0.0.1")
        let password = "redis-pw-never-logged"
        let redis = try RedisTestServer(arguments: ["--tls-cert-file", pair.certificate, "--tls-key-file", pair.key,
                                                    "--tls-ca-cert-file", authority.certificate, "--tls-auth-clients", "no",
                                                    "--requirepass", password], tlsOnly: true)
        let cluster = try await cluster(redis: redis, redisURL: { "rediss://:\(password)@127.0.0.1:\($0)/5" },
                                        configure: { $0.cluster.redisCAFile = authority.certificate })
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channelID = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        _ = try alice.send(channelID, "over rediss")
        #expect(((try bob.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "over rediss")
        await cluster.end()
    }
}

/// The JSON lines a gateway logs, kept for a test to read.
private final class LogLines: Sendable {
    private let storage = Mutex<[String]>([])

    var all: [String] { storage.withLock { $0 } }

    var logger: Logger {
        Logger(label: "chat-gateway") { label in
            JSONLogHandler(label: label, level: .debug) { line in self.storage.withLock { $0.append(line) } }
        }
    }
}
