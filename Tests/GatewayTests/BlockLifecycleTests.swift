import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §15 "Blocks cover every kind of event" over loopback, the cases a chat app's
/// users meet: "alice" blocks "bob". (Every combination is table-tested in the engine.)
@Suite("Block lifecycle")
struct BlockLifecycleTests {
    @Test("1-to-1: bob's reaction never reaches alice, counts only in bob's own view, and counts again once she unblocks")
    func oneToOneReaction() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try alice.send(id, "look")
        _ = try alice.blockResults("user.block", ["bob"])
        let bobs = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "😡"])
        #expect(RawChatClient.reactions(bobs) == ["😡": 1], "bob is not told: his view counts it")
        #expect(try alice.expectNoEvent("reaction.added"))
        #expect(RawChatClient.reactions(try alice.historyMessage(id, seq: 1)) == [:])
        let (changes, _) = try alice.allChanges(id)
        #expect(RawChatClient.reactions(changes.first { $0["seq"] as? Int == 1 }) == [:])
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(RawChatClient.reactions(try alice.historyMessage(id, seq: 1)) == ["😡": 1],
                "reactions are counted by the relation at read time")
    }

    @Test("1-to-1: an edit bob makes during the block hides that message from alice for good, even after unblock")
    func oneToOneEditDuringBlock() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try gateway.say(bob, id, "hello")
        _ = try alice.takeEvents("message.new")
        _ = try alice.blockResults("user.block", ["bob"])
        _ = try bob.ok("message.update", ["channelId": id, "seq": 1, "text": "something nasty"])
        #expect(try alice.expectNoEvent("message.updated"))
        #expect(try alice.historyTexts(id) == [])
        _ = try alice.blockResults("user.unblock", ["bob"])
        _ = try bob.ok("message.update", ["channelId": id, "seq": 1, "text": "sorry"])
        #expect(try alice.expectNoEvent("message.updated"))
        #expect(try alice.historyTexts(id) == [])
        #expect(try bob.historyTexts(id) == ["sorry"])
    }

    @Test("group: a hideBlocked=1 connection gets none of bob's lifecycle events and no count of his; the other device does")
    func hideBlockedDevice() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let phone = try await gateway.connect("alice", query: "&device=phone")
        let tablet = try await gateway.connect("alice", query: "&device=tablet&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        try carol.send(id, "topic")
        try bob.send(id, "bob's")
        _ = try phone.blockResults("user.block", ["bob"])
        _ = try phone.takeEvents("message.new")
        _ = try tablet.takeEvents("message.new")
        _ = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "+1"])
        _ = try bob.ok("message.update", ["channelId": id, "seq": 2, "text": "bob's, edited"])
        try bob.send(id, "bob's reply", ["parentSeq": 1])
        _ = try carol.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "+1"])
        // The phone hears everything, with bob counted.
        #expect(try phone.eventData("reaction.added")["reactions"] as? [String: Int] == ["+1": 1])
        #expect(try phone.eventData("message.updated")["change"] as? String == "edit")
        #expect(try phone.eventData("message.new")["text"] as? String == "bob's reply")
        // The tablet hears carol's reaction only, counted without bob's.
        let tabletReactions = try tablet.takeEvents("reaction.added")
        #expect(tabletReactions.count == 1)
        #expect((tabletReactions.first?["data"] as? [String: Any])?["reactions"] as? [String: Int] == ["+1": 1])
        #expect((tabletReactions.first?["data"] as? [String: Any])?["userId"] as? String == "carol")
        #expect(try tablet.takeEvents("message.updated").isEmpty)
        #expect(try tablet.takeEvents("message.new").isEmpty)
        let topic = try tablet.historyMessage(id, seq: 1)
        #expect(RawChatClient.reactions(topic) == ["+1": 1])
        #expect(topic?["replyCount"] as? Int == 0)
        #expect((try tablet.ok("message.history", ["channelId": id, "parentSeq": 1])["messages"] as? [[String: Any]])?.isEmpty == true)
        let phoneTopic = try phone.historyMessage(id, seq: 1)
        #expect(RawChatClient.reactions(phoneTopic) == ["+1": 2])
        #expect(phoneTopic?["replyCount"] as? Int == 1)
    }

    @Test("strict: nothing of bob's lifecycle reaches alice and nothing of hers reaches him, both ways")
    func strictBothWays() async throws {
        let (gateway, _) = try await BlockFixture.gateway(mode: .strict)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        try carol.send(id, "topic")
        _ = try alice.blockResults("user.block", ["bob"])
        _ = try alice.takeEvents("message.new")
        _ = try bob.takeEvents("message.new")
        _ = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "b"])
        _ = try alice.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "a"])
        #expect(try alice.takeEvents("reaction.added").isEmpty)
        #expect(try bob.takeEvents("reaction.added").isEmpty)
        #expect(RawChatClient.reactions(try alice.historyMessage(id, seq: 1)) == ["a": 1])
        #expect(RawChatClient.reactions(try bob.historyMessage(id, seq: 1)) == ["b": 1])
        #expect(RawChatClient.reactions(try carol.historyMessage(id, seq: 1)) == ["a": 1, "b": 1])
        let aliceReply = try alice.send(id, "alice replies", ["parentSeq": 1])
        #expect(try bob.takeEvents("message.updated").isEmpty)
        #expect(try bob.historyMessage(id, seq: 1)?["replyCount"] as? Int == 0)
        // bob cannot touch what he cannot see.
        let seq = aliceReply["seq"] as? Int ?? 0
        #expect(try bob.errorCode("reaction.add", ["channelId": id, "seq": seq, "kind": "x"]) == "ERR_MESSAGE_NOT_FOUND")
        #expect(try bob.errorCode("message.send", ["channelId": id, "text": "x", "parentSeq": seq]) == "ERR_BAD_REQUEST")
    }

    @Test("a mention from a blocked user pushes only where his plain message would, and in a 1-to-1 leaves no trace")
    func mentionPush() async throws {
        let (gateway, push) = try await BlockFixture.gateway(push: true)
        let log = try #require(push)
        try await gateway.createUsers(["alice", "carol"])
        let bob = try await gateway.connect("bob")
        let marker = try await PushMarker.make(gateway, sender: bob, log: log)
        let pair = try bob.createGroup(["alice"])
        let group = try bob.createGroup(["alice", "carol"], ["pushFromBlockedUsers": true])
        let quiet = try bob.createGroup(["alice", "carol"])
        try await gateway.adminBlock("alice", ["bob"])
        let inPair = try bob.send(pair, "@alice", ["mentionedUserIds": ["alice"]])
        let inGroup = try bob.send(group, "@alice", ["mentionedUserIds": ["alice"]])
        let inQuiet = try bob.send(quiet, "@alice", ["mentionedUserIds": ["alice"]])
        try await marker.settle()
        #expect(log.lines(for: "alice", messageID: inPair["id"] as? String ?? "").isEmpty)
        #expect(log.lines(for: "alice", messageID: inQuiet["id"] as? String ?? "").isEmpty,
                "a mention never adds a push a plain message would not get")
        let groupPush = log.lines(for: "alice", messageID: inGroup["id"] as? String ?? "")
        #expect(groupPush.count == 1, "pushFromBlockedUsers: the group pushes, mention or not")
        #expect(groupPush.first?["mentioned"] as? Bool == true)
        #expect(log.lines(for: "carol", messageID: inGroup["id"] as? String ?? "").first?["mentioned"] == nil)
        let alice = try await gateway.connect("alice")
        #expect(try alice.listedChannel(pair)?["unreadCount"] as? Int == 0)
        #expect(try alice.historyTexts(pair) == [])
    }
}
