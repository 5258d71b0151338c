import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §5 `revealBlockedBy: false` (the standard default): the blocked user
/// cannot tell it was blocked. "alice" blocks "bob"; "carol" blocks nobody.
@Suite("Block not revealed")
struct BlockRevealTests {
    @Test("bob's sends to alice look exactly like sends to someone who did not block him")
    func sendLooksNormal() async throws {
        let (gateway, _) = try await BlockFixture.gateway(reveal: false)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let toAlice = try bob.createGroup(["alice"])
        let toCarol = try bob.createGroup(["carol"])
        let group = try bob.createGroup(["alice", "carol"])
        _ = try alice.blockResults("user.block", ["bob"])

        for channel in [toAlice, toCarol, group] {
            gateway.clock.advance(by: 1000)
            let reply = try bob.request("message.send", ["channelId": channel, "text": "hello", "clientMessageId": "k-\(channel)"])
            #expect(Set(reply.keys) == ["id", "type", "result"])
            #expect(reply["type"] as? String == "ok")
            #expect(reply["error"] == nil)
            let message = try #require(reply["result"] as? [String: Any])
            #expect(Shapes.keys(message) == Shapes.message)
            #expect(message["seq"] as? Int == 1)
            #expect(message["channelId"] as? String == channel)
            #expect(message["senderId"] as? String == "bob")
            #expect(message["text"] as? String == "hello")
            #expect(message["clientMessageId"] as? String == "k-\(channel)")
            // bob's own views show his message in place.
            #expect(try bob.historyTexts(channel) == ["hello"])
            let listed = try #require(try bob.listedChannel(channel))
            #expect((listed["lastMessage"] as? [String: Any])?["id"] as? String == message["id"] as? String)
            #expect(listed["lastActivityAt"] as? Int == message["createdAt"] as? Int)
        }
        // A retry of the hidden 1-to-1 send returns the same stored message, as for any other send.
        let retry = try bob.ok("message.send", ["channelId": toAlice, "text": "hello", "clientMessageId": "k-\(toAlice)"])
        #expect(retry["seq"] as? Int == 1)
        #expect(try bob.takeEvents("user.blocked").isEmpty)
        #expect(try carol.receivedTexts() == ["hello", "hello"])
    }

    @Test("bob cannot see the block on alice's User, in user.list, or through user.blocked.list")
    func userViewsHideTheBlock() async throws {
        let (gateway, _) = try await BlockFixture.gateway(reveal: false)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        _ = try await gateway.connect("carol")
        _ = try alice.blockResults("user.block", ["bob"])

        let aliceSeen = try bob.ok("user.get", ["userId": "alice"])
        let carolSeen = try bob.ok("user.get", ["userId": "carol"])
        #expect(aliceSeen["hasBlockedMe"] == nil)
        #expect(aliceSeen["blockedByMe"] as? Bool == false)
        #expect(Shapes.keys(aliceSeen) == Shapes.keys(carolSeen))
        #expect(aliceSeen["online"] as? Bool == true)
        let listed = try #require(try bob.ok("user.list", ["userIds": ["alice", "carol"]])["users"] as? [[String: Any]])
        #expect(listed.allSatisfy { $0["hasBlockedMe"] == nil })
        #expect(Set(listed.map(Shapes.keys)).count == 1)
        #expect(try bob.errorCode("user.blocked.list", ["direction": "me"]) == "ERR_FORBIDDEN")
        #expect(try bob.errorCode("user.blocked.list", ["direction": "both"]) == "ERR_FORBIDDEN")
        #expect((try bob.ok("user.blocked.list")["users"] as? [[String: Any]])?.isEmpty == true)
        // alice's own views never carry hasBlockedMe either.
        #expect(try alice.ok("user.get", ["userId": "bob"])["hasBlockedMe"] == nil)
        #expect((try alice.ok("me")["user"] as? [String: Any])?["hasBlockedMe"] == nil)
    }
}
