import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §15 over loopback: each request of the message lifecycle, its errors, and
/// the events the other members get.
@Suite("Message lifecycle requests")
struct LifecycleRequestTests {
    @Test("message.update: the author's edit keeps seq and createdAt, sets editedAt, takes a version; others get message.updated")
    func edit() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        let sent = try gateway.say(alice, id, "helo")
        #expect(sent["version"] as? Int == 1)
        #expect(sent["editedAt"] is NSNull)
        _ = try bob.takeEvents("message.new")
        gateway.clock.advance(by: 500)
        let edited = try alice.ok("message.update", ["channelId": id, "seq": 1, "text": "hello", "data": ["k": "v"]])
        #expect(edited["text"] as? String == "hello")
        #expect(edited["seq"] as? Int == 1)
        #expect(edited["createdAt"] as? Int == sent["createdAt"] as? Int)
        #expect(edited["editedAt"] as? Int == Int(gateway.clock.now()))
        #expect(edited["version"] as? Int == 2)
        #expect((edited["data"] as? [String: String]) == ["k": "v"])
        let event = try bob.eventData("message.updated")
        #expect(event["change"] as? String == "edit")
        #expect(canonicalJSON(event["message"]) == canonicalJSON(edited))
        #expect(try alice.expectNoEvent("message.updated"), "the editing connection gets the reply, not the event")
        // Only the fields given change; data null clears it.
        let mentioned = try alice.ok("message.update", ["channelId": id, "seq": 1, "mentionedUserIds": ["bob", "nobody"]])
        #expect(mentioned["text"] as? String == "hello")
        #expect(mentioned["mentionedUserIds"] as? [String] == ["bob"])
        let cleared = try alice.ok("message.update", ["channelId": id, "seq": 1, "data": NSNull()])
        #expect(cleared["data"] is NSNull)
        #expect(cleared["version"] as? Int == 4)

        #expect(try bob.errorCode("message.update", ["channelId": id, "seq": 1, "text": "mine now"]) == "ERR_FORBIDDEN")
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 9, "text": "x"]) == "ERR_MESSAGE_NOT_FOUND")
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 1]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 1, "text": ""]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 0, "text": "x"]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 1, "text": String(repeating: "x", count: 5001)])
            == "ERR_MESSAGE_TOO_LONG")
        #expect(try alice.errorCode("message.update", ["channelId": "nope", "seq": 1, "text": "x"]) == "ERR_CHANNEL_NOT_FOUND")
        let tooMany = (0..<26).map { "u\($0)" }
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 1, "mentionedUserIds": tooMany]) == "ERR_TOO_MANY_IDS")
    }

    @Test("message.delete: a tombstone with no text, data, mentions or reactions; edits and reactions then refused")
    func delete() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try alice.send(id, "secret", ["data": ["x": 1], "mentionedUserIds": ["bob"]])
        _ = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "👍"])
        #expect(try bob.errorCode("message.delete", ["channelId": id, "seq": 1]) == "ERR_FORBIDDEN")
        gateway.clock.advance(by: 10)
        let tombstone = try alice.ok("message.delete", ["channelId": id, "seq": 1])
        #expect(tombstone["text"] as? String == "")
        #expect(tombstone["data"] is NSNull)
        #expect(tombstone["mentionedUserIds"] as? [String] == [])
        #expect(RawChatClient.reactions(tombstone) == [:])
        #expect(tombstone["deletedAt"] as? Int == Int(gateway.clock.now()))
        _ = try bob.takeEvents("reaction.added")
        let event = try bob.eventData("message.updated")
        #expect(event["change"] as? String == "delete")
        #expect((event["message"] as? [String: Any])?["text"] as? String == "")
        // Deleting again answers the tombstone and takes no version.
        let again = try alice.ok("message.delete", ["channelId": id, "seq": 1])
        #expect(again["version"] as? Int == tombstone["version"] as? Int)
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 1, "text": "x"]) == "ERR_MESSAGE_DELETED")
        #expect(try bob.errorCode("reaction.add", ["channelId": id, "seq": 1, "kind": "👍"]) == "ERR_MESSAGE_DELETED")
        #expect(try bob.historyMessage(id, seq: 1)?["text"] as? String == "")
    }

    @Test("a deleted message no longer counts as unread; edits and reactions never move the channel list")
    func unreadAndChannelList() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try gateway.say(alice, id, "one")
        try gateway.say(alice, id, "two")
        #expect(try bob.listedChannel(id)?["unreadCount"] as? Int == 2)
        let activity = try bob.listedChannel(id)?["lastActivityAt"] as? Int
        gateway.clock.advance(by: 5000)
        _ = try alice.ok("message.update", ["channelId": id, "seq": 2, "text": "two!"])
        _ = try alice.ok("reaction.add", ["channelId": id, "seq": 2, "kind": "x"])
        let listed = try bob.listedChannel(id)
        #expect(listed?["lastActivityAt"] as? Int == activity)
        #expect((listed?["lastMessage"] as? [String: Any])?["text"] as? String == "two!")
        #expect(listed?["version"] as? Int == 4)
        _ = try alice.ok("message.delete", ["channelId": id, "seq": 1])
        #expect(try bob.listedChannel(id)?["unreadCount"] as? Int == 1)
    }

    @Test("reaction.add / reaction.remove: one per user and kind, counts in the events, no-ops answer as usual, 25 kinds at most")
    func reactions() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let bobPhone = try await gateway.connect("bob", query: "&device=phone")
        let id = try alice.createGroup(["bob"])
        try alice.send(id, "react to me")
        let added = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "👍"])
        #expect(RawChatClient.reactions(added) == ["👍": 1])
        #expect(added["ownReactions"] as? [String] == ["👍"])
        #expect(added["version"] as? Int == 2)
        let seen = try alice.eventData("reaction.added")
        #expect(seen["userId"] as? String == "bob")
        #expect(seen["kind"] as? String == "👍")
        #expect(seen["seq"] as? Int == 1)
        #expect(seen["channelId"] as? String == id)
        #expect(seen["reactions"] as? [String: Int] == ["👍": 1])
        #expect(try bobPhone.eventData("reaction.added")["userId"] as? String == "bob", "the reactor's other devices hear it")
        // Again: a no-op that answers as usual and takes no version.
        let again = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "👍"])
        #expect(again["version"] as? Int == 2)
        #expect(try alice.expectNoEvent("reaction.added"))
        _ = try alice.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "👍"])
        #expect(try bob.eventData("reaction.added")["reactions"] as? [String: Int] == ["👍": 2])
        let removed = try bob.ok("reaction.remove", ["channelId": id, "seq": 1, "kind": "👍"])
        #expect(RawChatClient.reactions(removed) == ["👍": 1])
        #expect(removed["ownReactions"] as? [String] == [])
        #expect(try alice.eventData("reaction.removed")["reactions"] as? [String: Int] == ["👍": 1])
        let absent = try bob.ok("reaction.remove", ["channelId": id, "seq": 1, "kind": "👍"])
        #expect(absent["version"] as? Int == removed["version"] as? Int)
        // Kinds: 1–64 bytes, no control characters, at most 25 per message.
        for bad in ["", String(repeating: "a", count: 65), "a\u{7}"] {
            #expect(try bob.errorCode("reaction.add", ["channelId": id, "seq": 1, "kind": bad]) == "ERR_BAD_REQUEST")
        }
        for kind in 0..<24 { _ = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "k\(kind)"]) }
        #expect(try bob.errorCode("reaction.add", ["channelId": id, "seq": 1, "kind": "one-too-many"]) == "ERR_TOO_MANY_REACTIONS")
        _ = try alice.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "k3"])
        #expect(try bob.errorCode("reaction.add", ["channelId": id, "seq": 9, "kind": "x"]) == "ERR_MESSAGE_NOT_FOUND")
        let history = try alice.historyMessage(id, seq: 1)
        #expect(RawChatClient.reactions(history)["k3"] == 2)
        #expect(history?["ownReactions"] as? [String] == ["k3", "👍"])
    }

    @Test("replies: parentSeq, thread history, replyCount and message.updated change reply; a reply cannot be a parent")
    func replies() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        try gateway.say(alice, id, "topic")
        try gateway.say(alice, id, "other")
        _ = try bob.takeEvents("message.new")
        let reply = try bob.send(id, "answer", ["parentSeq": 1])
        #expect(reply["parentSeq"] as? Int == 1)
        #expect(reply["seq"] as? Int == 3)
        let new = try alice.eventData("message.new")
        #expect(new["parentSeq"] as? Int == 1)
        let updated = try alice.eventData("message.updated")
        #expect(updated["change"] as? String == "reply")
        let parent = updated["message"] as? [String: Any]
        #expect(parent?["seq"] as? Int == 1)
        #expect(parent?["replyCount"] as? Int == 1)
        #expect(parent?["version"] as? Int == reply["version"] as? Int, "a reply's version is also its parent's")
        #expect(try bob.eventData("message.updated")["change"] as? String == "reply", "the replier's connection hears the count too")
        try bob.send(id, "more", ["parentSeq": 1])
        let thread = try alice.ok("message.history", ["channelId": id, "parentSeq": 1, "limit": 10])
        #expect((thread["messages"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["answer", "more"])
        #expect(try alice.historyMessage(id, seq: 1)?["replyCount"] as? Int == 2)
        #expect(try alice.fullHistory(id).count == 4, "history without parentSeq holds the replies too")
        #expect(try bob.errorCode("message.send", ["channelId": id, "text": "x", "parentSeq": 3]) == "ERR_BAD_REQUEST")
        #expect(try bob.errorCode("message.send", ["channelId": id, "text": "x", "parentSeq": 99]) == "ERR_BAD_REQUEST")
        // A deleted reply stays in its thread as a tombstone.
        _ = try bob.ok("message.delete", ["channelId": id, "seq": 3])
        let after = try alice.ok("message.history", ["channelId": id, "parentSeq": 1, "limit": 10])
        #expect((after["messages"] as? [[String: Any]])?.first?["parentSeq"] as? Int == 1)
    }

    @Test("mentions: at most 25, non-members dropped; a mentioned offline member's push says so")
    func mentions() async throws {
        let (gateway, push) = try await BlockFixture.gateway(push: true)
        try await gateway.createUsers(["carol", "dave"])
        let alice = try await gateway.connect("alice")
        let id = try alice.createGroup(["carol", "dave"])
        let sent = try alice.send(id, "hi @carol", ["mentionedUserIds": ["carol", "zed", "carol"]])
        #expect(sent["mentionedUserIds"] as? [String] == ["carol"])
        let tooMany = (0..<26).map { "u\($0)" }
        #expect(try alice.errorCode("message.send", ["channelId": id, "text": "x", "mentionedUserIds": tooMany]) == "ERR_TOO_MANY_IDS")
        let log = try #require(push)
        let messageID = try #require(sent["id"] as? String)
        #expect(try await log.waitForLine(user: "carol", messageID: messageID))
        #expect(log.lines(for: "carol", messageID: messageID).first?["mentioned"] as? Bool == true)
    }

    @Test("message.changes: every message created or changed after a version, once, in its latest state, paged by next")
    func changes() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        for text in ["a", "b", "c", "d"] { try gateway.say(alice, id, text) }
        let start = try bob.ok("message.changes", ["channelId": id, "afterVersion": 0, "limit": 3])
        #expect((start["messages"] as? [[String: Any]])?.compactMap { $0["seq"] as? Int } == [1, 2, 3])
        #expect(start["next"] as? Int == 3)
        #expect(start["version"] as? Int == 4)
        _ = try alice.ok("message.update", ["channelId": id, "seq": 2, "text": "B"])
        _ = try bob.ok("reaction.add", ["channelId": id, "seq": 2, "kind": "+1"])
        _ = try alice.ok("message.delete", ["channelId": id, "seq": 3])
        let (changed, version) = try bob.allChanges(id, after: 4, limit: 2)
        #expect(changed.compactMap { $0["seq"] as? Int } == [2, 3], "seq 2 changed twice, given once")
        #expect(changed.first?["text"] as? String == "B")
        #expect(changed.first?["ownReactions"] as? [String] == ["+1"])
        #expect(version == 7)
        let caughtUp = try bob.ok("message.changes", ["channelId": id, "afterVersion": 7, "limit": 10])
        #expect((caughtUp["messages"] as? [[String: Any]])?.isEmpty == true)
        #expect(caughtUp["next"] is NSNull)
        #expect(try bob.errorCode("message.changes", ["channelId": id, "afterVersion": -1]) == "ERR_BAD_REQUEST")
        #expect(try bob.errorCode("message.changes", ["channelId": id, "afterVersion": 0, "limit": 101]) == "ERR_INVALID_LIMIT")
        #expect(try bob.errorCode("message.changes", ["channelId": "nope", "afterVersion": 0]) == "ERR_CHANNEL_NOT_FOUND")
    }

    @Test("a restart keeps edits, tombstones, reactions, replies, mentions and versions")
    func restart() async throws {
        let directory = TestGateway.temporaryDirectory()
        var id = ""
        var before: [[String: Any]] = []
        do {
            let gateway = try await TestGateway.chat(dataDirectory: directory)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            id = try alice.createGroup(["bob"])
            try alice.send(id, "one", ["mentionedUserIds": ["bob"]])
            try alice.send(id, "two")
            try bob.send(id, "re", ["parentSeq": 1])
            _ = try alice.ok("message.update", ["channelId": id, "seq": 1, "text": "ONE"])
            _ = try bob.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "🎉"])
            _ = try alice.ok("message.delete", ["channelId": id, "seq": 2])
            before = try bob.fullHistory(id)
        }
        let again = try await TestGateway.chat(dataDirectory: directory)
        let bob = try await again.connect("bob")
        #expect(canonicalJSON(try bob.fullHistory(id)) == canonicalJSON(before))
        #expect(try bob.listedChannel(id)?["version"] as? Int == 6)
        let next = try bob.send(id, "after restart")
        #expect(next["version"] as? Int == 7)
        #expect(next["seq"] as? Int == 4)
    }

    @Test("the change rate: edits, deletes and reactions share limits.userChangesPerSecond, apart from the message rate")
    func changeRate() async throws {
        let gateway = try await TestGateway.chat { _, chat in
            chat.limits.userChangesPerSecond = 10
            chat.limits.userChangeBurst = 10
            chat.limits.userMessagesPerSecond = 5
            chat.limits.userMessageBurst = 5
        }
        try await gateway.createUsers(["bob"])
        let alice = try await gateway.connect("alice")
        let id = try alice.createGroup(["bob"])
        try alice.send(id, "m")
        for index in 0..<10 { _ = try alice.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "k\(index)"]) }
        let limited = try alice.request("reaction.add", ["channelId": id, "seq": 1, "kind": "k10"])
        let error = limited["error"] as? [String: Any]
        #expect(error?["code"] as? String == "ERR_RATE_LIMITED")
        #expect((error?["retryAfterMs"] as? Int ?? 0) > 0)
        #expect(try alice.errorCode("message.update", ["channelId": id, "seq": 1, "text": "x"]) == "ERR_RATE_LIMITED")
        // The message rate is its own: a send still goes through.
        #expect(try alice.send(id, "still")["seq"] as? Int == 2)
        gateway.clock.advance(by: 1000)
        _ = try alice.ok("reaction.add", ["channelId": id, "seq": 1, "kind": "k10"])
    }
}
