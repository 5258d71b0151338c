import ChatCore
import Foundation
import Testing
@testable import Gateway

/// Blocks and what they hid survive a restart on the same data folder (PROTOCOL.md §5:
/// "never, even after unblock" must hold across restarts too). "alice" blocks "bob".
@Suite("Block restart")
struct BlockRestartTests {
    static func gateway(_ dataDirectory: String, mode: DeliveryPolicy.Mode = .standard) async throws -> TestGateway {
        try await TestGateway.chat(dataDirectory: dataDirectory) { _, chat in
            chat.blocking.mode = mode
            chat.blocking.revealBlockedBy = mode == .strict
        }
    }

    @Test("bob's view of a channel with alice, who blocked him, survives a restart: distinct finds it, alice stays out")
    func inviterViewRestart() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        var id = ""
        do {
            let gateway = try await Self.gateway(dataDirectory)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            _ = try alice.blockResults("user.block", ["bob"])
            id = try #require(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"], "distinct": true])["id"] as? String)
        }
        let gateway = try await Self.gateway(dataDirectory)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let view = try bob.ok("channel.get", ["channelId": id])
        #expect(view["members"] as? [String] == ["bob", "alice"])
        #expect(view["isOneToOne"] as? Bool == true)
        #expect(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"], "distinct": true])["id"] as? String == id)
        #expect(try alice.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
    }

    @Test("standard: blocks, hidden 1-to-1 messages and alice's unmoved channel list are kept")
    func standardRestart() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        var pair = ""
        var hiddenFirst = ""
        var createdAt: Int?
        var before: [String: Any] = [:]
        do {
            let gateway = try await Self.gateway(dataDirectory)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            pair = try alice.createGroup(["bob"])
            before = try gateway.say(bob, pair, "before")
            let created = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "name": "second"])
            hiddenFirst = try #require(created["id"] as? String)
            createdAt = created["createdAt"] as? Int
            _ = try alice.blockResults("user.block", ["bob"])
            try gateway.say(bob, pair, "hidden")
            try gateway.say(bob, hiddenFirst, "hidden first")
            // Before the restart, as the §5 table says.
            #expect((try alice.listedChannel(hiddenFirst)?["lastMessage"]) is NSNull)
        }
        let gateway = try await Self.gateway(dataDirectory)
        let alice = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == ["bob"])
        #expect(try alice.historyTexts(pair) == ["before"])
        #expect(try alice.historyTexts(hiddenFirst) == [])
        #expect(try bob.historyTexts(pair) == ["before", "hidden"])

        let pairView = try #require(try alice.listedChannel(pair))
        #expect((pairView["lastMessage"] as? [String: Any])?["id"] as? String == before["id"] as? String)
        #expect(pairView["lastActivityAt"] as? Int == before["createdAt"] as? Int)
        let firstView = try #require(try alice.listedChannel(hiddenFirst))
        #expect(firstView["lastMessage"] is NSNull,
                "after a restart alice's lastMessage shows a 1-to-1 message hidden from her: \(firstView["lastMessage"] ?? "nil")")
        #expect(firstView["lastActivityAt"] as? Int == createdAt)

        // The new connection filters bob from the start.
        try await gateway.createUsers(["carol"])
        let group = try alice.createGroup(["bob", "carol"])
        try gateway.say(bob, pair, "still hidden")
        try gateway.say(bob, group, "hidden by hideBlocked")
        #expect(try alice.receivedTexts() == [])
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try alice.historyTexts(pair) == ["before"])
    }

    @Test("strict: alice's channel list stays where it was across a restart")
    func strictRestart() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        var id = ""
        var c1: [String: Any] = [:]
        do {
            let gateway = try await Self.gateway(dataDirectory, mode: .strict)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            let carol = try await gateway.connect("carol")
            id = try carol.createGroup(["alice", "bob"])
            c1 = try gateway.say(carol, id, "c1")
            _ = try alice.blockResults("user.block", ["bob"])
            try gateway.say(bob, id, "b1")
            #expect((try alice.listedChannel(id)?["lastMessage"] as? [String: Any])?["id"] as? String == c1["id"] as? String)
        }
        let gateway = try await Self.gateway(dataDirectory, mode: .strict)
        let alice = try await gateway.connect("alice")
        #expect(try alice.historyTexts(id) == ["c1"])
        let view = try #require(try alice.listedChannel(id))
        #expect((view["lastMessage"] as? [String: Any])?["id"] as? String == c1["id"] as? String,
                "after a restart alice's lastMessage shows b1, which strict mode hides from her: \(view["lastMessage"] ?? "nil")")
        #expect(view["lastActivityAt"] as? Int == c1["createdAt"] as? Int)
    }
}
