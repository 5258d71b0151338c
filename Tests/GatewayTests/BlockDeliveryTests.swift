import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §5 live delivery (first two rows of the table) and §7 `user.blocked` /
/// `user.unblocked`, standard mode. "alice" blocks "bob" throughout.
@Suite("Block delivery")
struct BlockDeliveryTests {
    @Test("a block holds on every device before the reply; the other devices get user.blocked / user.unblocked")
    func twoDevicesOneToOne() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let phone = try await gateway.connect("alice", query: "&device=phone")
        let laptop = try await gateway.connect("alice", query: "&device=laptop")
        let bob = try await gateway.connect("bob")
        let id = try bob.createGroup(["alice"])
        gateway.clock.advance(by: 1000)
        try gateway.say(bob, id, "before")
        #expect(try phone.receivedTexts() == ["before"])
        #expect(try laptop.receivedTexts() == ["before"])

        #expect(try phone.blockResults("user.block", ["bob"]) == ["bob": "success"])
        // The reply is in: from now on nothing of bob's reaches any alice connection.
        let during = try gateway.say(bob, id, "during")
        #expect(during["seq"] as? Int == 2)
        let blockedEvent = try laptop.nextEvent("user.blocked")
        #expect(blockedEvent["data"] as? [String: String] == ["userId": "bob"])
        #expect(try laptop.receivedTexts() == [])
        #expect(try phone.receivedTexts() == [])
        #expect(try phone.expectNoEvent("user.blocked"), "the requesting connection gets the reply, not the event")
        #expect(try bob.takeEvents("user.blocked").isEmpty)

        // A block already in place: success, no change, no second event.
        #expect(try phone.blockResults("user.block", ["bob"]) == ["bob": "success"])
        #expect(try laptop.expectNoEvent("user.blocked"))

        #expect(try laptop.blockResults("user.unblock", ["bob"]) == ["bob": "success"])
        let unblockedEvent = try phone.nextEvent("user.unblocked")
        #expect(unblockedEvent["data"] as? [String: String] == ["userId": "bob"])
        #expect(try laptop.expectNoEvent("user.unblocked"))
        try gateway.say(bob, id, "after")
        #expect(try phone.receivedTexts() == ["after"])
        #expect(try laptop.receivedTexts() == ["after"])
        // "during" stays hidden from alice on both devices; bob sees all three.
        #expect(try phone.historyTexts(id) == ["before", "after"])
        #expect(try laptop.historyTexts(id) == ["before", "after"])
        #expect(try bob.historyTexts(id) == ["before", "during", "after"])
    }

    @Test("a block from one device updates a hideBlocked=1 device of the blocker at once (1-to-N)")
    func twoDevicesHideBlockedGroup() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let phone = try await gateway.connect("alice", query: "&device=phone")
        let tablet = try await gateway.connect("alice", query: "&device=tablet&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        try gateway.say(bob, id, "before")
        #expect(try tablet.receivedTexts() == ["before"])

        _ = try phone.blockResults("user.block", ["bob"])
        try gateway.say(bob, id, "during")
        _ = try tablet.nextEvent("user.blocked")
        #expect(try tablet.receivedTexts() == [], "hideBlocked=1 connection must not receive a blocked user's message")
        #expect(try phone.receivedTexts() == ["before", "during"], "a connection without hideBlocked receives it in 1-to-N")
        #expect(try carol.receivedTexts() == ["before", "during"])

        _ = try phone.blockResults("user.unblock", ["bob"])
        try gateway.say(bob, id, "after")
        _ = try tablet.nextEvent("user.unblocked")
        #expect(try tablet.receivedTexts() == ["after"])
    }

    @Test("1-to-1: bob's messages do not reach alice live; bob gets a normal ok; alice still reaches bob")
    func oneToOneLive() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try gateway.say(bob, id, "one")
        #expect(try alice.receivedTexts() == ["one"])
        _ = try alice.blockResults("user.block", ["bob"])

        let hidden = try gateway.say(bob, id, "two")
        #expect(Shapes.keys(hidden) == Shapes.message)
        #expect(hidden["seq"] as? Int == 2)
        #expect(hidden["senderId"] as? String == "bob")
        #expect(hidden["text"] as? String == "two")
        let hidden2 = try gateway.say(bob, id, "three")
        #expect(hidden2["seq"] as? Int == 3)
        #expect(try alice.receivedTexts() == [])
        // Standard mode is one-way: alice's messages still reach bob.
        try gateway.say(alice, id, "from alice")
        #expect(try bob.receivedTexts() == ["from alice"])
        #expect(try bob.takeEvents("user.blocked").isEmpty)
    }

    @Test("1-to-N: alice receives bob's message live unless her connection has hideBlocked=1")
    func groupLive() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let aliceHidden = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        _ = try alice.blockResults("user.block", ["bob"])
        let sent = try gateway.say(bob, id, "from bob")
        #expect(sent["seq"] as? Int == 1)
        #expect(Shapes.keys(sent) == Shapes.message)
        try gateway.say(carol, id, "from carol")
        #expect(try alice.receivedTexts() == ["from bob", "from carol"])
        #expect(try aliceHidden.receivedTexts() == ["from carol"])
        // hideBlocked only hides what alice blocked: bob still gets alice's messages.
        try gateway.say(aliceHidden, id, "from alice")
        #expect(try bob.receivedTexts() == ["from carol", "from alice"])
        #expect(try alice.receivedTexts() == ["from alice"])
    }

    @Test("open channel: as 1-to-N live, bob's message is stored and shown in alice's history")
    func openChannelLive() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let aliceHidden = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try alice.createGroup([], ["channelType": "open", "name": "lobby"])
        _ = try bob.ok("channel.join", ["channelId": id])
        _ = try carol.ok("channel.join", ["channelId": id])
        _ = try alice.blockResults("user.block", ["bob"])
        let sent = try gateway.say(bob, id, "open from bob")
        #expect(sent["seq"] as? Int == 1)
        try gateway.say(carol, id, "open from carol")
        #expect(try alice.receivedTexts() == ["open from bob", "open from carol"])
        #expect(try aliceHidden.receivedTexts() == ["open from carol"])
        #expect(try alice.historyTexts(id) == ["open from bob", "open from carol"])
        #expect(try bob.historyTexts(id) == ["open from bob", "open from carol"])
    }

    @Test("1-to-1 becomes 1-to-N when a third member joins: bob reaches alice live again, the hidden message stays hidden")
    func oneToOneBecomesGroup() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try alice.createGroup(["bob"])
        _ = try alice.blockResults("user.block", ["bob"])
        try gateway.say(bob, id, "hidden in 1-to-1")
        #expect(try alice.receivedTexts() == [])

        let invited = try bob.ok("channel.invite", ["channelId": id, "userIds": ["carol"]])
        #expect(invited["isOneToOne"] as? Bool == false)
        #expect(invited["members"] as? [String] == ["alice", "bob", "carol"])
        let updated = try #require(try alice.nextEvent("channel.updated")["data"] as? [String: Any])
        #expect(updated["isOneToOne"] as? Bool == false)

        try gateway.say(bob, id, "visible in 1-to-N")
        #expect(try alice.receivedTexts() == ["visible in 1-to-N"])
        #expect(try carol.receivedTexts() == ["visible in 1-to-N"])
        #expect(try alice.historyTexts(id) == ["visible in 1-to-N"])
        #expect(try bob.historyTexts(id) == ["hidden in 1-to-1", "visible in 1-to-N"])
        // Unblocking does not bring the 1-to-1 message back.
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try alice.historyTexts(id) == ["visible in 1-to-N"])
        #expect(try alice.ok("channel.get", ["channelId": id])["isOneToOne"] as? Bool == false)
    }

    @Test("a block is per pair: bob's block of carol does not affect what alice receives")
    func blockIsPerPair() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob", query: "&hideBlocked=1")
        let carol = try await gateway.connect("carol")
        let id = try alice.createGroup(["bob", "carol"])
        _ = try bob.blockResults("user.block", ["carol"])
        try gateway.say(carol, id, "from carol")
        #expect(try alice.receivedTexts() == ["from carol"])
        #expect(try bob.receivedTexts() == [])
        #expect(try alice.historyTexts(id) == ["from carol"])
        #expect(try bob.historyTexts(id) == [])
    }
}
