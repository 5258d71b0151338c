import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §9 push events through the JSON Lines sink, filtered per §5 (row
/// "push event to A when offline"). Offline users are created through the admin API
/// and never connect; "alice" blocks "bob" through the admin API.
@Suite("Block push events")
struct BlockPushTests {
    @Test("an offline member gets exactly one push line per message, with the §9 fields; a live member gets none")
    func pushBasics() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["alice", "carol"])
        let bob = try await gateway.connect("bob")
        let marker = try await PushMarker.make(gateway, sender: bob, log: push)
        let id = try bob.createGroup(["alice", "carol"])

        let first = try gateway.say(bob, id, "hello \"offline\" 👋")
        let firstID = try #require(first["id"] as? String)
        #expect(try await push.waitForLine(user: "alice", messageID: firstID))
        #expect(try await push.waitForLine(user: "carol", messageID: firstID))
        try await marker.settle()
        #expect(push.lines(for: "alice", messageID: firstID).count == 1)
        #expect(push.lines(for: "carol", messageID: firstID).count == 1)
        #expect(push.lines(for: "bob", messageID: firstID).isEmpty, "never to the sender")
        let line = try #require(push.lines(for: "alice", messageID: firstID).first)
        #expect(Set(line.keys) == ["type", "userId", "channelId", "messageId", "senderId", "text", "createdAt"])
        #expect(line["type"] as? String == "push")
        #expect(line["channelId"] as? String == id)
        #expect(line["senderId"] as? String == "bob")
        #expect(line["text"] as? String == "hello \"offline\" 👋")
        #expect(line["createdAt"] as? Int == first["createdAt"] as? Int)

        // alice comes online: no push for her, carol still gets one.
        let alice = try await gateway.connect("alice")
        let second = try gateway.say(bob, id, "second")
        let secondID = try #require(second["id"] as? String)
        #expect(try await push.waitForLine(user: "carol", messageID: secondID))
        try await marker.settle()
        #expect(push.lines(for: "alice", messageID: secondID).isEmpty, "alice has a live connection")
        #expect(push.lines(for: "carol", messageID: secondID).count == 1)
        #expect(try alice.receivedTexts() == ["second"])
    }

    @Test("1-to-1: no push to an offline blocker, until the unblock")
    func oneToOneNoPush() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["alice"])
        let bob = try await gateway.connect("bob")
        let marker = try await PushMarker.make(gateway, sender: bob, log: push)
        let id = try bob.createGroup(["alice"])
        try await gateway.adminBlock("alice", ["bob"])

        let hidden = try gateway.say(bob, id, "hidden")
        let hiddenID = try #require(hidden["id"] as? String)
        try await marker.settle()
        #expect(push.lines(for: "alice", messageID: hiddenID).isEmpty, "1-to-1 message from a blocked user was pushed")

        let unblocked = try await gateway.admin("DELETE", "/v1/admin/users/alice/blocks/bob")
        #expect(unblocked.status == 200)
        let after = try gateway.say(bob, id, "after")
        #expect(try await push.waitForLine(user: "alice", messageID: try #require(after["id"] as? String)))
        try await marker.settle()
        #expect(push.lines(for: "alice", messageID: hiddenID).isEmpty)
    }

    @Test("1-to-N: push to an offline blocker only while the channel's pushFromBlockedUsers is true")
    func groupPushFromBlockedUsers() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["alice", "carol"])
        let bob = try await gateway.connect("bob")
        let id = try bob.createGroup(["alice", "carol"])
        try await gateway.adminBlock("alice", ["bob"])
        #expect(try bob.ok("channel.get", ["channelId": id])["pushFromBlockedUsers"] as? Bool == false)

        // carol's line comes from the same fan-out as alice's would: once it is in, alice's is decided.
        let off = try gateway.say(bob, id, "push off")
        let offID = try #require(off["id"] as? String)
        #expect(try await push.waitForLine(user: "carol", messageID: offID))
        #expect(push.lines(for: "alice", messageID: offID).isEmpty, "pushed though pushFromBlockedUsers is false")

        let updated = try bob.ok("channel.update", ["channelId": id, "pushFromBlockedUsers": true])
        #expect(updated["pushFromBlockedUsers"] as? Bool == true)
        let on = try gateway.say(bob, id, "push on")
        let onID = try #require(on["id"] as? String)
        #expect(try await push.waitForLine(user: "alice", messageID: onID), "no push though pushFromBlockedUsers is true")
        #expect(try await push.waitForLine(user: "carol", messageID: onID))
        #expect(push.lines(for: "alice", messageID: onID).count == 1)

        _ = try bob.ok("channel.update", ["channelId": id, "pushFromBlockedUsers": false])
        let offAgain = try gateway.say(bob, id, "push off again")
        let offAgainID = try #require(offAgain["id"] as? String)
        #expect(try await push.waitForLine(user: "carol", messageID: offAgainID))
        #expect(push.lines(for: "alice", messageID: offAgainID).isEmpty)
    }

    @Test("1-to-N created with pushFromBlockedUsers: true pushes from the start")
    func groupCreatedWithPushFromBlockedUsers() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["alice", "carol"])
        let bob = try await gateway.connect("bob")
        let id = try bob.createGroup(["alice", "carol"], ["pushFromBlockedUsers": true])
        try await gateway.adminBlock("alice", ["bob"])
        let sent = try gateway.say(bob, id, "pushed")
        #expect(try await push.waitForLine(user: "alice", messageID: try #require(sent["id"] as? String)))
    }

    @Test("only the creator or the admin API may change pushFromBlockedUsers: bob, blocked by the creator, cannot turn it on")
    func onlyCreatorSetsPushOption() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        try await gateway.createUsers(["carol"])
        let id = try alice.createGroup(["bob", "carol"])
        _ = try alice.blockResults("user.block", ["bob"])
        #expect(try bob.errorCode("channel.update", ["channelId": id, "pushFromBlockedUsers": true]) == "ERR_FORBIDDEN")
        #expect(try bob.errorCode("channel.update", ["channelId": id, "name": "renamed", "pushFromBlockedUsers": false]) == "ERR_FORBIDDEN")
        #expect(try alice.ok("channel.get", ["channelId": id])["pushFromBlockedUsers"] as? Bool == false)
        #expect(try alice.ok("channel.get", ["channelId": id])["name"] as? String == "")
        // Renaming stays open to every member; the creator may set the option.
        #expect(try bob.ok("channel.update", ["channelId": id, "name": "renamed"])["name"] as? String == "renamed")
        #expect(try alice.ok("channel.update", ["channelId": id, "pushFromBlockedUsers": true])["pushFromBlockedUsers"] as? Bool == true)
        // The backend may change any channel's option.
        let byAdmin = try await gateway.admin("POST", "/v1/admin/channels/\(id)", body: ["pushFromBlockedUsers": false])
        #expect(byAdmin.status == 200, "\(byAdmin.body)")
        #expect(byAdmin.json["pushFromBlockedUsers"] as? Bool == false)
        #expect(try alice.ok("channel.get", ["channelId": id])["pushFromBlockedUsers"] as? Bool == false)
        #expect(try await gateway.admin("POST", "/v1/admin/channels/c_nope", body: ["name": "x"]).status == 404)
    }

    @Test("open channel: no push at all, blocked or not")
    func openChannelNoPush() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["alice", "carol"])
        let bob = try await gateway.connect("bob")
        let marker = try await PushMarker.make(gateway, sender: bob, log: push)
        let created = try await gateway.admin("POST", "/v1/admin/channels",
                                              body: ["type": "open", "userIds": ["alice", "bob", "carol"],
                                                     "pushFromBlockedUsers": true])
        #expect(created.status == 200, "\(created.body)")
        let id = try #require(created.json["id"] as? String)
        try await gateway.adminBlock("alice", ["bob"])
        let sent = try gateway.say(bob, id, "open message")
        let sentID = try #require(sent["id"] as? String)
        try await marker.settle()
        #expect(push.lines(for: "alice", messageID: sentID).isEmpty)
        #expect(push.lines(for: "carol", messageID: sentID).isEmpty)
    }

    @Test("no push for a member with a live connection, even one that hides blocked users")
    func liveBlockerGetsNoPush() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["carol"])
        let alice = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let id = try bob.createGroup(["alice", "carol"], ["pushFromBlockedUsers": true])
        _ = try alice.blockResults("user.block", ["bob"])
        let sent = try gateway.say(bob, id, "not live, not pushed")
        let sentID = try #require(sent["id"] as? String)
        #expect(try await push.waitForLine(user: "carol", messageID: sentID))
        #expect(push.lines(for: "alice", messageID: sentID).isEmpty)
        #expect(try alice.receivedTexts() == [])
    }

    @Test("a member whose last connection closed is pushed to again; one of two devices closing is not enough")
    func pushAfterGoingOffline() async throws {
        let (gateway, log) = try await BlockFixture.gateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["carol"])
        let bob = try await gateway.connect("bob")
        let marker = try await PushMarker.make(gateway, sender: bob, log: push)
        let phone = try await gateway.connect("alice", query: "&device=phone")
        let laptop = try await gateway.connect("alice", query: "&device=laptop")
        let id = try bob.createGroup(["alice", "carol"])

        phone.connection.dropConnection()
        _ = try await gateway.admin("GET", "/v1/admin/users/alice")  // a round trip through the core after the close
        let stillOnline = try gateway.say(bob, id, "laptop still online")
        let stillOnlineID = try #require(stillOnline["id"] as? String)
        #expect(try await push.waitForLine(user: "carol", messageID: stillOnlineID))
        try await marker.settle()
        #expect(push.lines(for: "alice", messageID: stillOnlineID).isEmpty)

        laptop.connection.dropConnection()
        var pushed = false
        for attempt in 0..<5 where !pushed {
            let sent = try gateway.say(bob, id, "offline now \(attempt)")
            pushed = try await push.waitForLine(user: "alice", messageID: try #require(sent["id"] as? String))
        }
        #expect(pushed, "alice got no push after her last connection closed")
    }
}
