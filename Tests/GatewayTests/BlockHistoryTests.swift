import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §5 rows "A's channel list moves" and "A's message.history shows it",
/// standard mode. "alice" blocks "bob" throughout.
@Suite("Block history and channel list")
struct BlockHistoryTests {
    @Test("1-to-1: a message sent during the block is hidden from alice forever; earlier ones stay; bob sees all")
    func oneToOneHiddenForever() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try gateway.say(bob, id, "before 1")
        try gateway.say(alice, id, "before 2")
        _ = try alice.blockResults("user.block", ["bob"])
        try gateway.say(bob, id, "during 1")
        try gateway.say(bob, id, "during 2")

        #expect(try alice.historyTexts(id) == ["before 1", "before 2"])
        #expect(try bob.historyTexts(id) == ["before 1", "before 2", "during 1", "during 2"])
        // Paging backwards from the end skips the hidden ones too.
        let latest = try #require(try alice.ok("message.history", ["channelId": id, "limit": 1])["messages"] as? [[String: Any]])
        #expect(latest.texts == ["before 2"])
        let around = try #require(try alice.ok("message.history", ["channelId": id, "afterSeq": 1, "limit": 10])["messages"]
                                  as? [[String: Any]])
        #expect(around.texts == ["before 2"])

        // Unblocking does not reveal them; new messages show again.
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try alice.historyTexts(id) == ["before 1", "before 2"])
        try gateway.say(bob, id, "after")
        #expect(try alice.historyTexts(id) == ["before 1", "before 2", "after"])
        #expect(try bob.historyTexts(id) == ["before 1", "before 2", "during 1", "during 2", "after"])
        // A second block and unblock changes nothing for the old hidden ones.
        _ = try alice.blockResults("user.block", ["bob"])
        #expect(try alice.historyTexts(id) == ["before 1", "before 2", "after"])
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try alice.historyTexts(id) == ["before 1", "before 2", "after"])
    }

    @Test("1-to-1: alice's lastMessage and lastActivityAt do not move for bob's hidden messages; bob's do")
    func oneToOneChannelListDoesNotMove() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        try await gateway.createUsers(["carol"])
        let id = try alice.createGroup(["bob"])
        let other = try alice.createGroup(["carol"])  // a second channel to order against
        let before = try gateway.say(bob, id, "before")
        let beforeID = try #require(before["id"] as? String)
        let beforeAt = try #require(before["createdAt"] as? Int)
        _ = try alice.blockResults("user.block", ["bob"])
        try gateway.say(alice, other, "alice elsewhere")  // `other` is now alice's newest channel

        let hidden = try gateway.say(bob, id, "hidden")
        let hiddenAt = try #require(hidden["createdAt"] as? Int)
        #expect(hiddenAt > beforeAt)

        let aliceView = try #require(try alice.listedChannel(id))
        #expect((aliceView["lastMessage"] as? [String: Any])?["id"] as? String == beforeID)
        #expect(aliceView["lastActivityAt"] as? Int == beforeAt)
        let aliceGet = try alice.ok("channel.get", ["channelId": id])
        #expect((aliceGet["lastMessage"] as? [String: Any])?["id"] as? String == beforeID)
        #expect(aliceGet["lastActivityAt"] as? Int == beforeAt)
        // Order: `other` still first for alice, though bob's channel got the newer message.
        let aliceOrder = (try alice.ok("channel.list", ["limit": 10])["channels"] as? [[String: Any]])?.ids
        #expect(aliceOrder == [other, id])

        let bobView = try #require(try bob.listedChannel(id))
        #expect((bobView["lastMessage"] as? [String: Any])?["id"] as? String == hidden["id"] as? String)
        #expect(bobView["lastActivityAt"] as? Int == hiddenAt)

        // After the unblock, the hidden message still does not count; a new one does.
        _ = try alice.blockResults("user.unblock", ["bob"])
        let stillBefore = try #require(try alice.listedChannel(id))
        #expect((stillBefore["lastMessage"] as? [String: Any])?["id"] as? String == beforeID)
        let after = try gateway.say(bob, id, "after")
        let moved = try #require(try alice.listedChannel(id))
        #expect((moved["lastMessage"] as? [String: Any])?["id"] as? String == after["id"] as? String)
        #expect(moved["lastActivityAt"] as? Int == after["createdAt"] as? Int)
    }

    @Test("1-to-1: when the first message ever is hidden, alice sees no lastMessage and the creation time")
    func oneToOneHiddenFirstMessage() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let created = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])
        let id = try #require(created["id"] as? String)
        _ = try alice.blockResults("user.block", ["bob"])
        try gateway.say(bob, id, "hidden 1")
        try gateway.say(bob, id, "hidden 2")
        let view = try #require(try alice.listedChannel(id))
        #expect(view["lastMessage"] is NSNull)
        #expect(view["lastActivityAt"] as? Int == created["createdAt"] as? Int)
        #expect(try alice.historyTexts(id) == [])
    }

    @Test("1-to-N: bob's message is in alice's history and moves her channel list; hideBlocked=1 hides it in history")
    func groupHistory() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let aliceHidden = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        _ = try alice.blockResults("user.block", ["bob"])
        try gateway.say(carol, id, "c1")
        let fromBob = try gateway.say(bob, id, "b1")

        #expect(try alice.historyTexts(id) == ["c1", "b1"])
        #expect(try aliceHidden.historyTexts(id) == ["c1"])
        let view = try #require(try alice.listedChannel(id))
        #expect((view["lastMessage"] as? [String: Any])?["id"] as? String == fromBob["id"] as? String)
        #expect(view["lastActivityAt"] as? Int == fromBob["createdAt"] as? Int)
        // Unblocked, the hideBlocked=1 connection sees bob's message again (nothing is hidden forever in 1-to-N).
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try aliceHidden.historyTexts(id) == ["c1", "b1"])
    }

    @Test("1-to-N with hideBlocked=1: history pages fill up past the hidden messages, both directions")
    func hideBlockedPaging() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        _ = try alice.blockResults("user.block", ["bob"])
        var seqs: [String: Int] = [:]
        for (client, text) in [(carol, "c1"), (bob, "b1"), (bob, "b2"), (bob, "b3"), (carol, "c2"), (bob, "b4"), (bob, "b5"),
                               (carol, "c3")] {
            seqs[text] = try gateway.say(client, id, text)["seq"] as? Int
        }
        func page(_ fields: [String: Any]) throws -> [String] {
            var fields = fields
            fields["channelId"] = id
            return (try alice.ok("message.history", fields)["messages"] as? [[String: Any]])?.texts ?? ["<none>"]
        }
        #expect(try page(["limit": 2]) == ["c2", "c3"])
        #expect(try page(["limit": 3]) == ["c1", "c2", "c3"])
        #expect(try page(["beforeSeq": seqs["c2"] ?? 0, "limit": 2]) == ["c1"])
        #expect(try page(["beforeSeq": seqs["c3"] ?? 0, "limit": 1]) == ["c2"])
        #expect(try page(["afterSeq": 0, "limit": 2]) == ["c1", "c2"])
        #expect(try page(["afterSeq": seqs["c1"] ?? 0, "limit": 1]) == ["c2"])
        #expect(try page(["afterSeq": seqs["c2"] ?? 0, "limit": 5]) == ["c3"])
        #expect(try alice.historyTexts(id) == ["c1", "c2", "c3"])
        #expect(try bob.historyTexts(id).count == 8)
    }
}
