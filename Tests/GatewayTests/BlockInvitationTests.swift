import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §5 invitations: a blocked user's invitations never land;
/// `blocking.excludeFromInvitations` drops users the inviter blocked.
@Suite("Block invitations")
struct BlockInvitationTests {
    @Test("bob creates a group with alice, who blocked him: alice is silently left out, and bob's view is the one he would have had")
    func createLeavesBlockerOut() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        // The reply bob gets when nobody blocked him, to compare with.
        let unblocked = try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice", "carol"], "name": "trap"])
        _ = try alice.nextEvent("channel.updated")
        _ = try carol.nextEvent("channel.updated")
        _ = try alice.blockResults("user.block", ["bob"])

        let reply = try bob.request("channel.create", ["channelType": "group", "userIds": ["alice", "carol"], "name": "trap"])
        #expect(reply["type"] as? String == "ok", "no error to bob: \(reply)")
        let channel = try #require(reply["result"] as? [String: Any])
        let id = try #require(channel["id"] as? String)
        #expect(channel["members"] as? [String] == ["bob", "alice", "carol"])
        #expect(BlockViews.shape(channel) == BlockViews.shape(unblocked))
        #expect(BlockViews.shape(try bob.ok("channel.get", ["channelId": id])) == BlockViews.shape(unblocked))
        #expect(try bob.listedChannel(id)?["members"] as? [String] == ["bob", "alice", "carol"])
        // carol sees who is really there.
        let toCarol = try #require(try carol.nextEvent("channel.updated")["data"] as? [String: Any])
        #expect(toCarol["members"] as? [String] == ["bob", "carol"])
        #expect(try alice.expectNoEvent("channel.updated"))
        #expect(try alice.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
        #expect(try alice.errorCode("message.history", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
        #expect(try alice.listedChannel(id) == nil)
        try gateway.say(bob, id, "you cannot hear this")
        #expect(try alice.receivedTexts() == [])
        #expect(try carol.receivedTexts() == ["you cannot hear this"])
    }

    @Test("bob opens a 1-to-1 with alice, who blocked him: two members and isOneToOne, as without the block; distinct finds it again")
    func oneToOneLooksTheSame() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let unblocked = try bob.ok("channel.create", ["channelType": "group", "userIds": ["carol"], "distinct": true])
        _ = try alice.blockResults("user.block", ["bob"])

        let alone = try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"], "distinct": true])
        #expect(alone["members"] as? [String] == ["bob", "alice"])
        #expect(alone["isOneToOne"] as? Bool == true)
        #expect(Set(BlockViews.keys(alone)) == Set(BlockViews.keys(unblocked)))
        #expect(try alice.expectNoEvent("channel.updated"))
        let id = try #require(alone["id"] as? String)
        #expect(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"], "distinct": true])["id"] as? String == id)
        _ = carol
        // bob's messages are stored and acknowledged as in any 1-to-1 where he is blocked.
        let sent = try gateway.say(bob, id, "hello?")
        #expect(sent["seq"] as? Int == 1)
        #expect(try alice.receivedTexts() == [])
        #expect(try bob.ok("channel.get", ["channelId": id])["members"] as? [String] == ["bob", "alice"])
    }

    @Test("bob invites alice, who blocked him, into an existing group: alice is left out, bob sees her invited")
    func inviteLeavesBlockerOut() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let dave = try await gateway.connect("dave")
        let id = try carol.createGroup(["bob"])
        _ = try alice.blockResults("user.block", ["bob"])

        let reply = try bob.request("channel.invite", ["channelId": id, "userIds": ["alice"]])
        #expect(reply["type"] as? String == "ok", "no error to bob: \(reply)")
        let invited = try #require(reply["result"] as? [String: Any])
        #expect(invited["members"] as? [String] == ["carol", "bob", "alice"])
        #expect(invited["isOneToOne"] as? Bool == false)
        #expect(try alice.expectNoEvent("channel.updated"))
        #expect(try alice.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
        #expect(try carol.ok("channel.get", ["channelId": id])["members"] as? [String] == ["carol", "bob"])

        // Together with someone who has not blocked bob: only that one lands.
        let mixed = try bob.ok("channel.invite", ["channelId": id, "userIds": ["alice", "dave"]])
        #expect(mixed["members"] as? [String] == ["carol", "bob", "alice", "dave"])
        _ = try dave.nextEvent("channel.updated")
        #expect(try alice.expectNoEvent("channel.updated"))
        #expect(try dave.ok("channel.get", ["channelId": id])["members"] as? [String] == ["carol", "bob", "dave"])

        // carol, whom alice did not block, can invite alice; bob's view keeps her where it had her.
        let byCarol = try carol.ok("channel.invite", ["channelId": id, "userIds": ["alice"]])
        #expect(byCarol["members"] as? [String] == ["carol", "bob", "dave", "alice"])
        #expect(try bob.ok("channel.get", ["channelId": id])["members"] as? [String] == ["carol", "bob", "alice", "dave"])
    }

    @Test("the blocker creating or inviting: blocked users are dropped only with excludeFromInvitations",
          arguments: [false, true])
    func excludeFromInvitations(exclude: Bool) async throws {
        let (gateway, _) = try await BlockFixture.gateway(exclude: exclude)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        try await gateway.createUsers(["carol", "dave"])
        _ = try alice.blockResults("user.block", ["bob"])

        let created = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"]])
        let id = try #require(created["id"] as? String)
        #expect(created["members"] as? [String] == (exclude ? ["alice", "carol"] : ["alice", "bob", "carol"]))
        if exclude {
            #expect(try bob.expectNoEvent("channel.updated"))
            #expect(try bob.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
        } else {
            _ = try bob.nextEvent("channel.updated")
        }

        let other = try alice.createGroup(["dave"])
        let invited = try alice.ok("channel.invite", ["channelId": other, "userIds": ["bob"]])
        #expect(invited["members"] as? [String] == (exclude ? ["alice", "dave"] : ["alice", "dave", "bob"]))
        // After the unblock, bob can be invited again.
        _ = try alice.blockResults("user.unblock", ["bob"])
        let again = try alice.ok("channel.invite", ["channelId": other, "userIds": ["bob"]])
        #expect(again["members"] as? [String] == ["alice", "dave", "bob"])
    }

    @Test("unblocking lets bob's invitations land again")
    func unblockRestoresInvitations() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        _ = try alice.blockResults("user.block", ["bob"])
        #expect(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"]])["members"] as? [String] == ["bob", "alice"])
        #expect(try alice.expectNoEvent("channel.updated"))
        _ = try alice.blockResults("user.unblock", ["bob"])
        let channel = try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"]])
        #expect(channel["members"] as? [String] == ["bob", "alice"])
        #expect(channel["isOneToOne"] as? Bool == true)
        _ = try alice.nextEvent("channel.updated")
    }
}

/// What a channel reply shows besides its ids and times: the shape a blocked inviter must
/// find unchanged.
enum BlockViews {
    static func keys(_ channel: [String: Any]) -> [String] { Array(channel.keys) }

    static func shape(_ channel: [String: Any]) -> String {
        var copy = channel
        copy["id"] = nil
        copy["createdAt"] = nil
        copy["lastActivityAt"] = nil
        return canonicalJSON(copy)
    }
}
