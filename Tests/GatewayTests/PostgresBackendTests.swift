import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// The gateway on `storage.backend: postgres` end to end over loopback sockets: the
/// same requests and answers as on SQLite, state that survives a restart, and two
/// gateways on one database agreeing on `seq` and on a `clientMessageId` retry.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "CHAT_TEST_POSTGRES_URL is not set"), .serialized)
struct PostgresBackendTests {
    private func gateway(on database: PostgresTestDatabase) async throws -> TestGateway {
        try await TestGateway.chat { _, chat in chat.storage.backend = .postgres; chat.storage.postgresURL = database.url }
    }

    @Test func messagesBlocksAndChannelsSurviveARestart() async throws {
        let database = try await PostgresTestDatabase.make()
        defer { Task { await database.drop() } }
        var channelID = ""
        do {
            let gateway = try await gateway(on: database)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            _ = try await gateway.connect("carol")
            let channel = try alice.ok("channel.create", ["channelType": "group", "name": "pg", "userIds": ["bob"]])
            channelID = try #require(channel["id"] as? String)
            _ = try bob.nextEvent("channel.updated")
            for n in 1...3 {
                let sent = try alice.send(channelID, "hello \(n)")
                #expect(sent["seq"] as? Int == n)
                let event = try bob.nextEvent("message.new")
                #expect((event["data"] as? [String: Any])?["text"] as? String == "hello \(n)")
            }
            _ = try bob.ok("user.block", ["userIds": ["carol"]])
        }
        let restarted = try await gateway(on: database)
        let bob = try await restarted.connect("bob")
        let history = try bob.ok("message.history", ["channelId": channelID])
        let messages = try #require(history["messages"] as? [[String: Any]])
        #expect(messages.map { $0["seq"] as? Int } == [1, 2, 3])
        let blocked = try bob.ok("user.blocked.list")
        #expect(String(describing: blocked).contains("carol"))
        let alice = try await restarted.connect("alice")
        #expect(try alice.send(channelID, "after restart")["seq"] as? Int == 4)
    }

    /// §14 read marks on PostgreSQL: stored with the member's join mark, moved by
    /// `channel.markRead`, and the unread count rebuilt after a restart.
    @Test func readMarksSurviveARestart() async throws {
        let database = try await PostgresTestDatabase.make()
        defer { Task { await database.drop() } }
        var channelID = ""
        do {
            let gateway = try await gateway(on: database)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            _ = try await gateway.connect("carol")
            channelID = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
            for text in ["one", "two", "three"] { _ = try bob.send(channelID, text) }
            _ = try alice.send(channelID, "mine")
            _ = try alice.ok("channel.invite", ["channelId": channelID, "userIds": ["carol"]])
            let marked = try alice.ok("channel.markRead", ["channelId": channelID, "seq": 1])
            #expect([marked["lastReadSeq"] as? Int, marked["unreadCount"] as? Int] == [1, 2])
        }
        let restarted = try await gateway(on: database)
        for (user, expected) in [("alice", [1, 2]), ("bob", [0, 1]), ("carol", [4, 0])] {
            let client = try await restarted.connect(user)
            let channel = try client.ok("channel.get", ["channelId": channelID])
            #expect([channel["lastReadSeq"] as? Int, channel["unreadCount"] as? Int] == expected, "\(user)")
        }
    }

    /// Two nodes on one database (no bus yet): a retry of a `clientMessageId` through the
    /// other node answers with the first `ok`'s message, and the next message takes the next seq.
    @Test func aRetryThroughAnotherNodeIsTheSameMessage() async throws {
        let database = try await PostgresTestDatabase.make()
        defer { Task { await database.drop() } }
        let first = try await gateway(on: database)
        let alice = try await first.connect("alice")
        _ = try await first.connect("bob")
        let channel = try alice.ok("channel.create", ["channelType": "group", "name": "two nodes", "userIds": ["bob"]])
        let channelID = try #require(channel["id"] as? String)
        let sent = try alice.send(channelID, "once", ["clientMessageId": "c-1"])
        let second = try await gateway(on: database)
        let aliceThere = try await second.connect("alice")
        let retried = try aliceThere.send(channelID, "once", ["clientMessageId": "c-1"])
        #expect(retried["id"] as? String == sent["id"] as? String)
        #expect(retried["seq"] as? Int == 1)
        #expect(try aliceThere.send(channelID, "next")["seq"] as? Int == 2)
    }
}

extension PostgresBackendTests {
    @Test func readyWhileTheDatabaseAnswers() async throws {
        let database = try await PostgresTestDatabase.make()
        defer { Task { await database.drop() } }
        let gateway = try await gateway(on: database)
        #expect(gateway.server.router.dependencies != nil)
        try await Task.sleep(for: .milliseconds(200))
        #expect(gateway.server.router.dependencies?.unreachable == [])
    }
}
