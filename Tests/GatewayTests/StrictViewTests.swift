import Foundation
import Testing
@testable import Gateway

/// Strict mode (PROTOCOL.md §5, §14): while a block stands, the pair sees each other in
/// every reply exactly as a user who never connected, and what a viewer's counts,
/// `lastMessage` and history say agree, after a block and after an unblock.
@Suite("Strict mode views")
struct StrictViewTests {
    private static func unread(_ channel: [String: Any]) -> Int { channel["unreadCount"] as? Int ?? -1 }
    private static func lastText(_ channel: [String: Any]) -> String? { (channel["lastMessage"] as? [String: Any])?["text"] as? String }

    @Test("a1, a2, c1, a3, then alice blocks bob: bob's counts, lastMessage and history all say c1; after the unblock all four",
          arguments: [false, true])
    func countsLastMessageAndHistoryAgree(reveal: Bool) async throws {
        let (gateway, _) = try await BlockFixture.gateway(mode: .strict, reveal: reveal)
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let group = try alice.createGroup(["bob", "carol"])
        try gateway.say(alice, group, "a1")
        try gateway.say(alice, group, "a2")
        try gateway.say(carol, group, "c1")
        try gateway.say(alice, group, "a3")
        _ = try alice.blockResults("user.block", ["bob"])

        func bobSees() throws -> (get: [String: Any], listed: [String: Any], history: [String]) {
            let get = try bob.ok("channel.get", ["channelId": group])
            let listed = try #require(try bob.listedChannel(group))
            let after = get["lastReadSeq"] as? Int ?? 0
            let history = try #require(try bob.ok("message.history", ["channelId": group, "afterSeq": after])["messages"] as? [[String: Any]])
            return (get, listed, history.texts)
        }
        var seen = try bobSees()
        #expect(seen.history == ["c1"])
        #expect(Self.unread(seen.get) == 1 && Self.unread(seen.listed) == 1)
        #expect(Self.lastText(seen.get) == "c1" && Self.lastText(seen.listed) == "c1")
        // And the other way round: alice no longer sees bob's messages either (none here), nor counts them.
        try gateway.say(bob, group, "b1")
        let aliceView = try alice.ok("channel.get", ["channelId": group])
        #expect(Self.lastText(aliceView) == "a3" && Self.unread(aliceView) == 1, "alice: carol's c1 only")
        #expect(try alice.historyTexts(group) == ["a1", "a2", "c1", "a3"])

        _ = try alice.blockResults("user.unblock", ["bob"])
        seen = try bobSees()
        #expect(seen.history == ["a1", "a2", "c1", "a3", "b1"])
        #expect(Self.unread(seen.get) == 4 && Self.unread(seen.listed) == 4)
        #expect(Self.lastText(seen.get) == "b1" && Self.lastText(seen.listed) == "b1")
        let aliceAfter = try alice.ok("channel.get", ["channelId": group])
        #expect(Self.lastText(aliceAfter) == "b1" && Self.unread(aliceAfter) == 2)
    }

    @Test("user.get and user.list show the blocked pair to each other as never connected: online false, lastSeenAt 0",
          arguments: [false, true])
    func presenceInUserViews(reveal: Bool) async throws {
        let (gateway, _) = try await BlockFixture.gateway(mode: .strict, reveal: reveal)
        try await gateway.createUsers(["bob", "carol", "dave"])
        let alice = try await gateway.connect("alice")
        let aliceGone = try await gateway.connect("alice", query: "&device=gone")
        aliceGone.connection.dropConnection()
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        _ = try alice.blockResults("user.block", ["bob"])
        let never = try bob.ok("user.get", ["userId": "dave"])
        #expect(never["online"] as? Bool == false && never["lastSeenAt"] as? Int == 0)
        for (viewer, target) in [(bob, "alice"), (alice, "bob")] {
            let got = try viewer.ok("user.get", ["userId": target])
            #expect(got["online"] as? Bool == false, "\(target)")
            #expect(got["lastSeenAt"] as? Int == 0, "\(target)")
            let listed = try #require(try viewer.ok("user.list", ["userIds": [target]])["users"] as? [[String: Any]])
            #expect(listed.first?["online"] as? Bool == false && listed.first?["lastSeenAt"] as? Int == 0, "\(target)")
        }
        // Anyone else still sees alice as she is.
        #expect(try carol.ok("user.get", ["userId": "alice"])["online"] as? Bool == true)
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try bob.ok("user.get", ["userId": "alice"])["online"] as? Bool == true)
    }
}
