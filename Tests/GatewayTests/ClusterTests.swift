import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// Three gateway nodes on one PostgreSQL database (PROTOCOL.md §13), each a real gateway on
/// its own loopback port, clients connected to different nodes; each rule on one Redis and
/// on a 3-master Redis Cluster (`TestCluster.RedisKind`).
@Suite(.enabled(if: PostgresTestDatabase.isAvailable && RedisTestServer.isAvailable,
                "needs CHAT_TEST_POSTGRES_URL and redis-server"), .serialized)
struct ClusterTests {
    private func cluster(nodes count: Int = 3, on kind: TestCluster.RedisKind = .single,
                         configure: @escaping (inout GatewayConfiguration) -> Void = { _ in }) async throws -> TestCluster {
        try await TestCluster.start(nodes: count, kind: kind, configure: configure)
    }

    private func eventually(_ what: String, _ condition: () throws -> Bool) async throws {
        try await TestCluster.eventually(what, seconds: 3, condition)
    }

    private func group(by creator: RawChatClient, with members: [String]) async throws -> String {
        try await TestCluster.group(by: creator, with: members, name: "cluster")
    }

    /// Fires `rounds` requests of `type` from every device at once (params per round and
    /// device), then reads every answer: how many were `ok`, and the `retryAfterMs` of each
    /// refusal, which must be ERR_RATE_LIMITED.
    private func fireRounds(_ rounds: Int, on devices: [RawChatClient], _ type: String,
                            params: (Int, Int) -> [String: Any]) throws -> (ok: Int, retries: [Int]) {
        var fired = Array(repeating: [Int](), count: devices.count)
        for round in 0..<rounds {
            for (index, device) in devices.enumerated() {
                fired[index].append(try device.fire(type, params(round, index)))
            }
        }
        var ok = 0
        var retries: [Int] = []
        for (index, device) in devices.enumerated() {
            let replies = try device.replies(count: fired[index].count)
            for id in fired[index] {
                let reply = try #require(replies[id])
                if reply["type"] as? String == "ok" {
                    ok += 1
                } else {
                    let error = reply["error"] as? [String: Any]
                    #expect(error?["code"] as? String == "ERR_RATE_LIMITED")
                    retries.append(error?["retryAfterMs"] as? Int ?? -1)
                }
            }
        }
        return (ok, retries)
    }

    @Test(arguments: TestCluster.RedisKind.available)
    func aGroupAcrossThreeNodesGetsEveryMessageOnce(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let carol = try await cluster.nodes[2].connect("carol")
        let channelID = try await group(by: alice, with: ["bob", "carol"])
        let perSender = 20
        let members = [("alice", alice), ("bob", bob), ("carol", carol)]
        for n in 0..<perSender {
            for (name, client) in members { _ = try client.send(channelID, "\(name) \(n)") }
        }
        for (name, client) in members {
            var texts: [String] = []
            var seqs: [Int] = []
            while texts.count < 2 * perSender {
                let event = try client.nextEvent("message.new")
                let data = event["data"] as? [String: Any]
                texts.append(data?["text"] as? String ?? "")
                seqs.append(data?["seq"] as? Int ?? 0)
            }
            let expected = members.filter { $0.0 != name }.flatMap { other in (0..<perSender).map { "\(other.0) \($0)" } }
            #expect(Set(texts) == Set(expected), "\(name) got \(texts.count) messages")
            #expect(texts.count == Set(texts).count, "\(name) got a message twice")
            #expect(try client.expectNoEvent("message.new"))
        }
        // Each node timed its own writes' bus round trip (the bus lag every reply waits on).
        for node in cluster.nodes {
            let metrics = try await node.http("GET", "/metrics").body
            let count = metrics.split(separator: "\n").first { $0.hasPrefix("chat_bus_echo_duration_seconds_count") }
            #expect((count?.split(separator: " ").last.flatMap { Double($0) } ?? 0) >= Double(perSender), "\(count ?? "none")")
        }
        await cluster.end()
    }

    /// §13: a user who has just connected to one node exists on every node. Twenty new users
    /// each connect to node 2 and are at once invited, blocked and subscribed to from node 1
    /// (and named in an admin call there): never ERR_UID_NOT_FOUND, no retry.
    @Test(arguments: TestCluster.RedisKind.available)
    func aUserWhoJustConnectedIsKnownOnEveryNode(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(nodes: 2, on: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        for n in 0..<20 {
            let user = "newcomer-\(n)"
            _ = try await cluster.nodes[1].connect(user)
            let created = try alice.request("channel.create", ["channelType": "group", "userIds": [user]])
            #expect(created["type"] as? String == "ok", "\(user): \(created)")
            let blocked = try alice.ok("user.block", ["userIds": [user]])
            #expect((blocked["results"] as? [String: String])?[user] == "success", "\(user): \(blocked)")
            let got = try alice.request("user.get", ["userId": user])
            #expect(got["type"] as? String == "ok", "\(user): \(got)")
        }
        _ = try await cluster.nodes[1].connect("last-newcomer")
        let token = try await cluster.nodes[0].admin("POST", "/v1/admin/users/last-newcomer/blocks", body: ["userIds": ["alice"]])
        #expect(token.status == 200, "\(token.body)")
        #expect(try alice.errorCode("user.get", ["userId": "nobody-at-all"]) == "ERR_UID_NOT_FOUND")
        await cluster.end()
    }

    /// PROTOCOL.md §13: once A's block reply is out, no later message of B reaches A,
    /// whatever nodes they are on. Each trial: A (node 1) blocks B, B (node 2) sends at once,
    /// A unblocks, B sends a marker; the next message A sees must be the marker.
    @Test(arguments: TestCluster.RedisKind.available)
    func aBlockHoldsAcrossNodesFromItsReplyOn(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channelID = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        let trials = 1_000
        // Seconds of blocking socket calls: on a thread of their own, not the test pool's.
        let leaks = try await offThePool { () -> Int in
            var leaks = 0
            for trial in 0..<trials {
                _ = try alice.ok("user.block", ["userIds": ["bob"]])
                _ = try bob.send(channelID, "while blocked \(trial)")
                _ = try alice.ok("user.unblock", ["userIds": ["bob"]])
                _ = try bob.send(channelID, "marker \(trial)")
                let seen = (try alice.nextEvent("message.new")["data"] as? [String: Any])?["text"] as? String
                if seen != "marker \(trial)" {
                    leaks += 1
                    _ = try alice.nextEvent("message.new")  // the marker, behind the leak
                }
            }
            return leaks
        }
        #expect(leaks == 0, "\(leaks) of \(trials) messages sent after the block reply reached the blocker")
        await cluster.end()
    }

    /// A committed message reaches a member on another node even though its own node
    /// answered first; the message's seq is the database's, gapless across nodes.
    @Test(arguments: TestCluster.RedisKind.available)
    func seqIsGaplessWhenEveryNodeSends(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let clients = [try await cluster.nodes[0].connect("u1"), try await cluster.nodes[1].connect("u2"),
                       try await cluster.nodes[2].connect("u3")]
        let channelID = try await group(by: clients[0], with: ["u2", "u3"])
        var seqs: [Int] = []
        for n in 0..<30 {
            seqs.append(try clients[n % 3].send(channelID, "m\(n)")["seq"] as? Int ?? 0)
        }
        #expect(seqs.sorted() == Array(1...30))
        await cluster.end()
    }

    /// PROTOCOL.md §13: while Redis is down each node serves its own connections (a send
    /// is stored and answered), `/readyz` says so, and once the bus is back every
    /// connection gets `session.resync` for its channels and catches up from history.
    @Test func aBusOutageEndsInSessionResync() async throws {
        let cluster = try await cluster(nodes: 2)
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        let channelID = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        cluster.redis.kill()
        let node = cluster.nodes[0]
        try await eventually("readyz names redis") { node.server.router.dependencies?.unreachable == ["redis"] }
        let sent = try bob.send(channelID, "during the outage")
        #expect(sent["seq"] as? Int == 1)
        try cluster.redis.start()
        for client in [alice, bob] {
            let resync = try client.nextEvent("session.resync")
            #expect((resync["data"] as? [String: Any])?["channelIds"] as? [String] == [channelID])
        }
        let history = try alice.ok("message.history", ["channelId": channelID, "afterSeq": 0])
        let texts = (history["messages"] as? [[String: Any]] ?? []).map { $0["text"] as? String }
        #expect(texts == ["during the outage"])
        try await eventually("readyz ready again") { node.server.router.dependencies?.unreachable == [] }
        #expect(try alice.send(channelID, "after")["seq"] as? Int == 2)
        #expect(((try bob.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "after")
        await cluster.end()
    }

    /// PROTOCOL.md §6 across nodes: one user on three nodes fires 30 sends at once and gets
    /// exactly `userMessageBurst` (5) `ok`; the others are ERR_RATE_LIMITED with the wait
    /// until the shared bucket has a token again (one interval, 200 ms, on the stopped clocks).
    @Test(arguments: TestCluster.RedisKind.available)
    func theMessageRateCountsEveryNode(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind) { chat in
            chat.limits.userMessagesPerSecond = 5
            chat.limits.userMessageBurst = 5
        }
        let devices = [try await cluster.nodes[0].connect("alice", query: "&device=a"),
                       try await cluster.nodes[1].connect("alice", query: "&device=b"),
                       try await cluster.nodes[2].connect("alice", query: "&device=c")]
        _ = try await cluster.nodes[0].connect("bob")
        let channelID = try await group(by: devices[0], with: ["bob"])
        let (ok, retries) = try fireRounds(10, on: devices, "message.send") { round, index in
            ["channelId": channelID, "text": "m\(index)-\(round)"]
        }
        #expect(ok == 5)
        #expect(retries.count == 25 && retries.allSatisfy { $0 == 200 }, "\(retries)")
        await cluster.end()
    }

    /// PROTOCOL.md §15 across nodes: the change rate (edits, deletes, reactions) is one bucket
    /// per user for every node, as the message rate is: one user on three nodes fires 30
    /// reactions at once and gets exactly `userChangeBurst` (5) `ok`, the others
    /// ERR_RATE_LIMITED with one interval's wait.
    @Test(arguments: TestCluster.RedisKind.available)
    func theChangeRateCountsEveryNode(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind) { chat in
            chat.limits.userChangesPerSecond = 5
            chat.limits.userChangeBurst = 5
        }
        let devices = [try await cluster.nodes[0].connect("alice", query: "&device=a"),
                       try await cluster.nodes[1].connect("alice", query: "&device=b"),
                       try await cluster.nodes[2].connect("alice", query: "&device=c")]
        _ = try await cluster.nodes[0].connect("bob")
        let channelID = try await group(by: devices[0], with: ["bob"])
        _ = try devices[0].ok("message.send", ["channelId": channelID, "text": "react to this"])
        let (ok, retries) = try fireRounds(10, on: devices, "reaction.add") { round, _ in
            ["channelId": channelID, "seq": 1, "kind": "k\(round % 4)"]
        }
        #expect(ok == 5)
        #expect(retries.count == 25 && retries.allSatisfy { $0 == 200 }, "\(retries)")
        await cluster.end()
    }

    /// PROTOCOL.md §6 across nodes: 30 live connections of one user spread over three
    /// nodes, and the 31st gets 429 on any node; closing one makes room on another.
    @Test(arguments: TestCluster.RedisKind.available)
    func theConnectionCapCountsEveryNode(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        var connections: [RawChatClient] = []
        for index in 0..<30 {
            connections.append(try await cluster.nodes[index % 3].connect("alice", query: "&device=d\(index)"))
        }
        for node in cluster.nodes {
            let token = try await node.token(for: "alice")
            #expect(try await node.upgrade(path: "/v1/ws?token=\(token)").response.status == 429)
        }
        _ = try await cluster.nodes[2].connect("bob")
        connections.removeFirst().connection.dropConnection()  // a node-1 connection
        let token = try await cluster.nodes[2].token(for: "alice")
        var admitted = false
        for _ in 0..<100 where !admitted {
            admitted = try await cluster.nodes[2].upgrade(path: "/v1/ws?token=\(token)").response.status == 101
            if !admitted { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(admitted)
        await cluster.end()
    }

    /// PROTOCOL.md §13: the open-channel display throttle (§6, 5 live a second) counts
    /// every node: every node records every message of the channel in the bus's order, so
    /// a listener on any node gets the same first 5 of 12 sent through three nodes at once,
    /// and history holds all 12. (Counting only its own senders, a node would pass up to 12.)
    @Test(arguments: TestCluster.RedisKind.available)
    func theOpenChannelThrottleCountsEveryNode(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind) { chat in chat.limits.openChannelMessagesPerSecond = 5 }
        var listeners: [RawChatClient] = []
        for n in 0..<3 { listeners.append(try await cluster.nodes[n].connect("listener\(n)")) }
        let open = try #require(try listeners[0].ok("channel.create", ["channelType": "open", "name": "lobby"])["id"] as? String)
        for listener in listeners.dropFirst() { _ = try listener.ok("channel.join", ["channelId": open]) }
        var senders: [RawChatClient] = []
        for n in 0..<12 {
            let sender = try await cluster.nodes[n % 3].connect("s\(n)")
            _ = try sender.ok("channel.join", ["channelId": open])
            senders.append(sender)
        }
        // A group with every listener: its message, sent last, comes after all 12 in every node's order.
        let marker = try await group(by: senders[0], with: ["listener0", "listener1", "listener2"])
        for listener in listeners { _ = try listener.nextEvent("channel.updated") }
        let fired = try senders.enumerated().map { try $1.fire("message.send", ["channelId": open, "text": "from s\($0)"]) }
        for (sender, id) in zip(senders, fired) { #expect(try sender.replies(count: 1)[id]?["type"] as? String == "ok") }
        _ = try senders[0].send(marker, "after the twelve")
        var seen: [[String]] = []
        for listener in listeners {
            var ids: [String] = []
            while true {
                let event = try listener.nextEvent("message.new")
                let data = event["data"] as? [String: Any] ?? [:]
                if data["channelId"] as? String == marker { break }
                ids.append(data["id"] as? String ?? "?")
            }
            seen.append(ids)
        }
        #expect(seen.map(\.count) == [5, 5, 5], "\(seen)")
        #expect(Set(seen.map { $0.joined(separator: ",") }).count == 1, "every node passes the same five: \(seen)")
        #expect(try listeners[2].fullHistory(open).count == 12)
        await cluster.end()
    }

    /// PROTOCOL.md §13/§14: presence reflects every node. A user is online while one of its
    /// connections lives on any node: followers on other nodes hear the first connection
    /// and the last close, nothing in between, and a node asked afterwards knows the state.
    @Test(arguments: TestCluster.RedisKind.available)
    func presenceChangesAreSeenOnEveryNode(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        _ = try await cluster.nodes[0].admin("POST", "/v1/admin/users", body: ["id": "alice"])
        let bob = try await cluster.nodes[1].connect("bob")
        /// "alice true" from a `user.presence`.
        func change(_ event: [String: Any]) -> String {
            let data = event["data"] as? [String: Any] ?? [:]
            return "\(data["userId"] as? String ?? "?") \(data["online"] as? Bool ?? false)"
        }
        func online(_ reply: [String: Any]) -> Bool? {
            (reply["users"] as? [[String: Any]])?.first?["online"] as? Bool
        }
        #expect(online(try bob.ok("presence.subscribe", ["userIds": ["alice"]])) == false)
        let phone = try await cluster.nodes[0].connect("alice", query: "&device=phone")
        #expect(change(try bob.nextEvent("user.presence")) == "alice true")
        let laptop = try await cluster.nodes[2].connect("alice", query: "&device=laptop")
        let carol = try await cluster.nodes[2].connect("carol")
        #expect(online(try carol.ok("presence.subscribe", ["userIds": ["alice"]])) == true)
        phone.connection.dropConnection()
        // Her laptop on node 3 keeps her online: give the close time to reach Redis, then check.
        for _ in 0..<20 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try bob.expectNoEvent("user.presence"), "alice is still online on node 3")
        #expect(online(try bob.ok("presence.subscribe", ["userIds": ["alice"]])) == true)
        laptop.connection.dropConnection()
        #expect(change(try bob.nextEvent("user.presence")) == "alice false")
        #expect(change(try carol.nextEvent("user.presence")) == "alice false")
        let late = try await cluster.nodes[0].connect("dave")
        #expect(online(try late.ok("presence.subscribe", ["userIds": ["alice"]])) == false)
        await cluster.end()
    }

    /// A node that cannot publish while the others stay subscribed (its publish connection
    /// lost, Redis fine) publishes what it committed meanwhile once it can: a block made then
    /// holds on the other nodes afterwards, instead of only in the database (fails with the
    /// outbox left unpublished).
    @Test(arguments: TestCluster.RedisKind.available)
    func writesANodeCouldNotPublishReachTheOthersOnceItCan(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        // In a group only the node's memory of the block filters (a 1-to-1 message is also
        // stored hidden by the database's block rows): the case the outbox is for.
        let aliceOnNode2 = try await cluster.nodes[1].connect("alice", query: "&device=tablet&hideBlocked=1")
        let bob = try await cluster.nodes[1].connect("bob")
        _ = try await cluster.nodes[0].admin("POST", "/v1/admin/users", body: ["id": "carol"])
        let dm = try await group(by: alice, with: ["bob", "carol"])
        _ = try bob.nextEvent("channel.updated")
        _ = try bob.send(dm, "before")
        _ = try aliceOnNode2.nextEvent("message.new")
        try #require(cluster.nodes[0].server.router.chat?.bus).holdPublisher(for: .milliseconds(500))
        try await eventually("node 1 lost its publish connection") {
            cluster.nodes[0].server.router.chat?.bus?.isReachable == false
        }
        #expect((try alice.ok("user.block", ["userIds": ["bob"]])["results"] as? [String: Any])?["bob"] as? String == "success")
        try await eventually("node 1 publishes again") { cluster.nodes[0].server.router.chat?.bus?.isReachable == true }
        // The block reaches node 2 off the bus shortly after node 1 can publish again.
        var delivered = true
        for attempt in 0..<50 where delivered {
            _ = try bob.send(dm, "after \(attempt)")
            _ = try await cluster.nodes[1].admin("GET", "/v1/admin/users/alice")  // a round trip through node 2
            delivered = !(try aliceOnNode2.expectNoEvent("message.new"))
            _ = aliceOnNode2.takeBufferedEvents("message.new")
            if delivered { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(!delivered, "node 2 never heard of the block alice made while node 1 could not publish")
        await cluster.end()
    }

    /// §14 across nodes: typing on one node reaches the members on the others, filtered
    /// there like the typing user's messages (alice blocked bob: not on her hideBlocked=1
    /// connection on another node).
    @Test(arguments: TestCluster.RedisKind.available)
    func typingReachesOtherNodesWithTheBlockCheck(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        let aliceHiding = try await cluster.nodes[2].connect("alice", query: "&device=h&hideBlocked=1")
        let bob = try await cluster.nodes[1].connect("bob")
        let carol = try await cluster.nodes[1].connect("carol")
        let channel = try await group(by: alice, with: ["bob", "carol"])
        _ = try bob.nextEvent("channel.updated")
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        _ = try bob.ok("typing.start", ["channelId": channel])
        _ = try carol.ok("typing.start", ["channelId": channel])
        func who(_ event: [String: Any]) -> String { (event["data"] as? [String: Any])?["userId"] as? String ?? "?" }
        #expect(who(try alice.nextEvent("typing.start")) == "bob", "a group on an ordinary connection: bob's typing shows")
        #expect(who(try aliceHiding.nextEvent("typing.start")) == "carol", "hideBlocked=1 on node 3: bob's never does")
        #expect(!aliceHiding.takeBufferedEvents("typing.start").contains { who($0) == "bob" })
        _ = try carol.send(channel, "done")
        #expect(who(try aliceHiding.nextEvent("typing.stop")) == "carol", "a message on node 2 ends carol's typing on node 3")
        await cluster.end()
    }

    /// §14 read state across nodes: a mark made on one node is the reader's state on every node
    /// (its other device's channel list), `channel.read` reaches members on other nodes, and in a
    /// 1-to-1 the blocker's marks never reach the blocked user wherever he is connected.
    @Test(arguments: TestCluster.RedisKind.available)
    func readMarksReachEveryNodeWithTheBlockRule(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let alice = try await cluster.nodes[0].connect("alice")
        let aliceThere = try await cluster.nodes[2].connect("alice", query: "&device=t")
        let bob = try await cluster.nodes[1].connect("bob")
        let group = try await group(by: alice, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        for text in ["one", "two", "three"] { _ = try bob.send(group, text) }
        func listed(_ client: RawChatClient) throws -> [Int] {
            let page = try client.ok("channel.list", ["limit": 10])
            let channel = (page["channels"] as? [[String: Any]])?.first { $0["id"] as? String == group }
            return [channel?["lastReadSeq"] as? Int ?? -1, channel?["unreadCount"] as? Int ?? -1]
        }
        try await eventually("node 3 has bob's messages") { try listed(aliceThere) == [0, 3] }
        _ = try alice.ok("channel.markRead", ["channelId": group, "seq": 2])
        func read(_ event: [String: Any]) -> String {
            let data = event["data"] as? [String: Any] ?? [:]
            return "\(data["userId"] as? String ?? "?") \(data["lastReadSeq"] as? Int ?? -1)"
        }
        #expect(read(try bob.nextEvent("channel.read")) == "alice 2")
        #expect(read(try aliceThere.nextEvent("channel.read")) == "alice 2")
        #expect(try listed(aliceThere) == [2, 1], "the mark from node 1 is alice's state on node 3")
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        _ = try alice.ok("channel.markRead", ["channelId": group, "seq": 3])
        #expect(read(try aliceThere.nextEvent("channel.read")) == "alice 3")
        #expect(try bob.takeEvents("channel.read").isEmpty, "a 1-to-1 where alice blocked bob: her marks stop")
        await cluster.end()
    }

    /// PROTOCOL.md §13: exactly one push event per offline member and message, however many
    /// nodes: the committing node pushes, and only to members with no connection on any node.
    @Test(arguments: TestCluster.RedisKind.available)
    func oneNodePushesEachOfflineMemberOnce(on kind: TestCluster.RedisKind) async throws {
        let folder = TestGateway.temporaryDirectory()
        let cluster = try await cluster(on: kind) { chat in
            chat.push = GatewayConfiguration.Push(sink: .file, file: folder + "/push-\(chat.cluster.nodeID ?? "").jsonl")
        }
        let alice = try await cluster.nodes[0].connect("alice")
        let bob = try await cluster.nodes[1].connect("bob")
        #expect(try await cluster.nodes[0].admin("POST", "/v1/admin/users", body: ["id": "carol"]).status == 200)
        let channelID = try await group(by: alice, with: ["bob", "carol"])
        _ = try bob.nextEvent("channel.updated")
        for n in 0..<3 { _ = try alice.send(channelID, "m\(n)") }
        for _ in 0..<3 { _ = try bob.nextEvent("message.new") }
        /// Every node's push file, as lines.
        func pushLines() -> [String] {
            (1...3).flatMap { n in
                ((try? String(contentsOfFile: folder + "/push-node-\(n).jsonl", encoding: .utf8)) ?? "")
                    .split(separator: "\n").map(String.init)
            }
        }
        for _ in 0..<100 where pushLines().count < 3 { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(200))  // a push too many would show by now
        let lines = pushLines()
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.allSatisfy { $0.contains(#""userId":"carol""#) }, "bob is online on another node: \(lines)")
        await cluster.end()
    }

    /// PROTOCOL.md §13: a `clientMessageId` sent through two nodes at once is stored once,
    /// both sends are answered with that message, and the other members get it once.
    @Test(arguments: TestCluster.RedisKind.available)
    func aClientMessageIdThroughTwoNodesAtOnceIsDeliveredOnce(on kind: TestCluster.RedisKind) async throws {
        let cluster = try await cluster(on: kind)
        let phone = try await cluster.nodes[0].connect("alice", query: "&device=phone")
        let laptop = try await cluster.nodes[1].connect("alice", query: "&device=laptop")
        let bob = try await cluster.nodes[2].connect("bob")
        let channelID = try await group(by: phone, with: ["bob"])
        _ = try bob.nextEvent("channel.updated")
        for round in 0..<20 {
            let fields: [String: Any] = ["channelId": channelID, "text": "once \(round)", "clientMessageId": "c-\(round)"]
            let first = try phone.fire("message.send", fields)
            let second = try laptop.fire("message.send", fields)
            let replyA = try phone.replies(count: 1)[first]
            let replyB = try laptop.replies(count: 1)[second]
            let a = try #require(replyA?["result"] as? [String: Any], "round \(round): \(String(describing: replyA))")
            let b = try #require(replyB?["result"] as? [String: Any], "round \(round): \(String(describing: replyB))")
            #expect(a["id"] as? String == b["id"] as? String && a["seq"] as? Int == round + 1)
        }
        var texts: [String] = []
        for _ in 0..<20 {
            texts.append(((try bob.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String ?? "")
        }
        #expect(texts == (0..<20).map { "once \($0)" })
        #expect(try bob.expectNoEvent("message.new"), "a send through two nodes reached bob twice")
        await cluster.end()
    }
}
