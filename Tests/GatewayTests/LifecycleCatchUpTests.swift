import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// PROTOCOL.md §15 catch-up: a client away while 200 edits, deletes, reactions, replies and
/// sends happen in 5 channels folds `message.changes` into what it had and ends with exactly
/// what the gateway shows it (every field of every message), on SQLite, on PostgreSQL, and
/// across two nodes (the changes made on both, the catch-up read from the second).
@Suite("Lifecycle catch-up", .serialized)
struct LifecycleCatchUpTests {
    /// What the away client keeps: each channel's messages by seq, and the version it saw.
    struct Mirror {
        var messages: [String: [Int: [String: Any]]] = [:]
        var versions: [String: Int] = [:]
    }

    /// A deterministic generator, so a failure replays.
    struct Steps {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    static func run(nodes: [TestGateway]) async throws {
        let first = nodes[0], last = nodes[nodes.count - 1]
        let bob = try await first.connect("bob")
        let carol = try await last.connect("carol")
        var alice: RawChatClient? = try await first.connect("alice")
        var channels: [String] = []
        for index in 0..<5 {
            let id = try bob.createGroup(["alice", "carol"], ["name": "catch-up \(index)"])
            channels.append(id)
            for n in 0..<6 { try (n % 2 == 0 ? bob : carol).send(id, "m\(n) in \(index)") }
            if let alice { try alice.send(id, "alice in \(index)") }
        }
        // alice reads everything, remembers each channel's version, and goes away.
        var mirror = Mirror()
        for id in channels {
            guard let alice else { break }
            for message in try alice.fullHistory(id) {
                mirror.messages[id, default: [:]][message["seq"] as? Int ?? 0] = message
            }
            let listed = try alice.ok("message.changes", ["channelId": id, "afterVersion": 0, "limit": 1])
            mirror.versions[id] = listed["version"] as? Int ?? 0
        }
        alice = nil
        var steps = Steps(state: 0x5eed)
        var counts: [String: Int] = [:]
        let writers = [bob, carol]
        for step in 0..<200 {
            let actor = writers[step % 2]
            let id = channels[steps.next(channels.count)]
            let top = try actor.ok("message.history", ["channelId": id, "limit": 100])["messages"] as? [[String: Any]] ?? []
            let own = top.filter { $0["senderId"] as? String == (step % 2 == 0 ? "bob" : "carol") && $0["deletedAt"] is NSNull }
            let target = top[steps.next(top.count)]
            let seq = target["seq"] as? Int ?? 1
            switch steps.next(6) {
            case 0 where !own.isEmpty:
                let mine = own[steps.next(own.count)]["seq"] as? Int ?? 1
                _ = try actor.ok("message.update", ["channelId": id, "seq": mine, "text": "edit \(step)", "mentionedUserIds": ["alice"]])
                counts["edit", default: 0] += 1
            case 1 where !own.isEmpty && steps.next(3) == 0:
                _ = try actor.ok("message.delete", ["channelId": id, "seq": own[steps.next(own.count)]["seq"] as? Int ?? 1])
                counts["delete", default: 0] += 1
            case 2, 3:
                let kind = ["👍", "🎉", "x"][steps.next(3)]
                let reply = try actor.request(steps.next(4) == 0 ? "reaction.remove" : "reaction.add",
                                              ["channelId": id, "seq": seq, "kind": kind])
                let code = (reply["error"] as? [String: Any])?["code"] as? String
                #expect(code == nil || code == "ERR_MESSAGE_DELETED", "reaction: \(reply)")
                counts["reaction", default: 0] += 1
            case 4 where target["parentSeq"] is NSNull:
                try actor.send(id, "reply \(step)", ["parentSeq": seq])
                counts["reply", default: 0] += 1
            default:
                try actor.send(id, "new \(step)")
                counts["send", default: 0] += 1
            }
        }
        #expect((counts["edit"] ?? 0) > 10 && (counts["delete"] ?? 0) > 3 && (counts["reaction"] ?? 0) > 40 && (counts["reply"] ?? 0) > 10,
                "a mix of every kind: \(counts)")
        // alice comes back on the last node and catches up from the versions she saw.
        let back = try await last.connect("alice")
        for id in channels {
            let (changed, version) = try back.allChanges(id, after: mirror.versions[id] ?? 0, limit: 17)
            var seen: Set<Int> = []
            for message in changed {
                let seq = message["seq"] as? Int ?? 0
                #expect(seen.insert(seq).inserted, "each message once in message.changes")
                mirror.messages[id, default: [:]][seq] = message
            }
            mirror.versions[id] = version
            let server = try back.fullHistory(id)
            let folded = (mirror.messages[id] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
            #expect(folded.count == server.count, "\(id): message count")
            for (mine, theirs) in zip(folded, server) {
                #expect(canonicalJSON(mine) == canonicalJSON(theirs), "\(id): seq \(theirs["seq"] ?? "?")")
            }
            #expect(try back.listedChannel(id)?["version"] as? Int == version)
        }
    }

    @Test("SQLite: 200 changes while away, folded from message.changes, equal the gateway's state")
    func sqlite() async throws {
        let gateway = try await TestGateway.chat()
        try await Self.run(nodes: [gateway])
    }

    @Test("PostgreSQL: the same", .enabled(if: PostgresTestDatabase.isAvailable, "CHAT_TEST_POSTGRES_URL is not set"))
    func postgres() async throws {
        let database = try await PostgresTestDatabase.make()
        defer { Task { await database.drop() } }
        let gateway = try await TestGateway.chat { _, chat in chat.storage.backend = .postgres; chat.storage.postgresURL = database.url }
        try await Self.run(nodes: [gateway])
    }

    @Test("two nodes: changes made on both, caught up on the second",
          .enabled(if: PostgresTestDatabase.isAvailable && RedisTestServer.isAvailable, "PostgreSQL or Redis is missing"))
    func cluster() async throws {
        let cluster = try await TestCluster.start(nodes: 2)
        do {
            try await Self.run(nodes: cluster.nodes)
        } catch {
            await cluster.end()
            throw error
        }
        await cluster.end()
    }
}
