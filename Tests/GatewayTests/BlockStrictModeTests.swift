import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §5 `blocking.mode: strict`: a block cuts all communication both ways,
/// in every channel type, live, in history and push. revealBlockedBy is set explicitly
/// (§12: it defaults to true in strict). "alice" blocks "bob" throughout.
@Suite("Block strict mode")
struct BlockStrictModeTests {
    static func strictGateway(push: Bool = false) async throws -> (gateway: TestGateway, push: PushLog?) {
        try await BlockFixture.gateway(mode: .strict, reveal: true, push: push)
    }

    @Test("1-to-1: neither side hears the other live or in history; both get normal oks")
    func oneToOneBothWays() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let id = try alice.createGroup(["bob"])
        _ = try alice.blockResults("user.block", ["bob"])

        let fromBob = try gateway.say(bob, id, "from bob")
        let fromAlice = try gateway.say(alice, id, "from alice")
        #expect(fromBob["seq"] as? Int == 1)
        #expect(fromAlice["seq"] as? Int == 2)
        #expect(Shapes.keys(fromAlice) == Shapes.message)
        #expect(try alice.receivedTexts() == [])
        #expect(try bob.receivedTexts() == [], "strict: the blocker's messages must not reach the blocked user")
        #expect(try alice.historyTexts(id) == ["from alice"])
        #expect(try bob.historyTexts(id) == ["from bob"])

        // Each side's channel list ends at its own message.
        #expect((try alice.listedChannel(id)?["lastMessage"] as? [String: Any])?["text"] as? String == "from alice")
        #expect((try bob.listedChannel(id)?["lastMessage"] as? [String: Any])?["text"] as? String == "from bob")

        // After the unblock new messages flow both ways; the ones sent during the block stay hidden.
        _ = try alice.blockResults("user.unblock", ["bob"])
        try gateway.say(bob, id, "bob again")
        try gateway.say(alice, id, "alice again")
        #expect(try alice.receivedTexts() == ["bob again"])
        #expect(try bob.receivedTexts() == ["alice again"])
        #expect(try alice.historyTexts(id) == ["from alice", "bob again", "alice again"])
        #expect(try bob.historyTexts(id) == ["from bob", "bob again", "alice again"])
    }

    @Test("1-to-N: cut both ways live and in history, even without hideBlocked; others hear both")
    func groupBothWays() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        _ = try alice.blockResults("user.block", ["bob"])

        try gateway.say(bob, id, "from bob")
        try gateway.say(alice, id, "from alice")
        try gateway.say(carol, id, "from carol")
        #expect(try alice.receivedTexts() == ["from carol"])
        #expect(try bob.receivedTexts() == ["from carol"])
        #expect(try carol.receivedTexts() == ["from bob", "from alice"])
        #expect(try alice.historyTexts(id) == ["from alice", "from carol"])
        #expect(try bob.historyTexts(id) == ["from bob", "from carol"])
        #expect(try carol.historyTexts(id) == ["from bob", "from alice", "from carol"])
    }

    @Test("open channel: cut both ways live and in history")
    func openBothWays() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup([], ["channelType": "open"])
        _ = try alice.ok("channel.join", ["channelId": id])
        _ = try bob.ok("channel.join", ["channelId": id])
        _ = try alice.blockResults("user.block", ["bob"])

        try gateway.say(bob, id, "from bob")
        try gateway.say(alice, id, "from alice")
        #expect(try alice.receivedTexts() == [])
        #expect(try bob.receivedTexts() == [])
        #expect(try carol.receivedTexts() == ["from bob", "from alice"])
        #expect(try alice.historyTexts(id) == ["from alice"])
        #expect(try bob.historyTexts(id) == ["from bob"])
    }

    @Test("a block from one device cuts the blocked user's live delivery to the blocker's other devices and back")
    func strictLiveUpdate() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let phone = try await gateway.connect("alice")
        let laptop = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        _ = try phone.blockResults("user.block", ["bob"])
        try gateway.say(laptop, id, "from alice's laptop")
        try gateway.say(bob, id, "from bob")
        #expect(try bob.receivedTexts() == [])
        #expect(try laptop.receivedTexts() == [])
        #expect(try phone.receivedTexts() == ["from alice's laptop"])
        #expect(try carol.receivedTexts() == ["from alice's laptop", "from bob"])
        _ = try laptop.nextEvent("user.blocked")
    }

    @Test("no push either way, whatever pushFromBlockedUsers says")
    func noPushEitherWay() async throws {
        let (gateway, log) = try await Self.strictGateway(push: true)
        let push = try #require(log)
        try await gateway.createUsers(["alice", "carol", "yann", "zoe"])
        // bob -> alice (alice blocked bob), alice offline.
        let bob = try await gateway.connect("bob")
        let group = try bob.createGroup(["alice", "carol"], ["pushFromBlockedUsers": true])
        let pair = try bob.createGroup(["alice"])
        try await gateway.adminBlock("alice", ["bob"])
        let inGroup = try gateway.say(bob, group, "group to blocker")
        let inGroupID = try #require(inGroup["id"] as? String)
        #expect(try await push.waitForLine(user: "carol", messageID: inGroupID))
        #expect(push.lines(for: "alice", messageID: inGroupID).isEmpty, "strict: pushed to the blocker")
        let inPair = try gateway.say(bob, pair, "pair to blocker")
        let inPairID = try #require(inPair["id"] as? String)

        // xena -> yann (xena blocked yann), yann offline: the blocked user gets no push from the blocker either.
        let xena = try await gateway.connect("xena")
        let group2 = try xena.createGroup(["yann", "zoe"], ["pushFromBlockedUsers": true])
        _ = try xena.blockResults("user.block", ["yann"])
        let fromBlocker = try gateway.say(xena, group2, "blocker to blocked")
        let fromBlockerID = try #require(fromBlocker["id"] as? String)
        #expect(try await push.waitForLine(user: "zoe", messageID: fromBlockerID))
        #expect(push.lines(for: "yann", messageID: fromBlockerID).isEmpty, "strict: pushed to the blocked user")
        // zoe's line came after bob's 1-to-1 message: its absence is settled too.
        #expect(push.lines(for: "alice", messageID: inPairID).isEmpty, "strict: 1-to-1 push to the blocker")
    }

    @Test("strict with revealBlockedBy: hasBlockedMe and direction me answered")
    func revealed() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        _ = try alice.blockResults("user.block", ["bob"])
        #expect(try bob.ok("user.get", ["userId": "alice"])["hasBlockedMe"] as? Bool == true)
        #expect((try bob.ok("user.blocked.list", ["direction": "me"])["users"] as? [[String: Any]])?.ids == ["alice"])
    }

    @Test("strict: the blocker's invitations drop the blocked user; the blocked user's drop the blocker")
    func strictInvitations() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        try await gateway.createUsers(["carol"])
        _ = try alice.blockResults("user.block", ["bob"])
        #expect(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"]])["members"] as? [String]
                == ["alice", "carol"])
        #expect(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice", "carol"]])["members"] as? [String]
                == ["bob", "carol"])
    }
}

extension BlockStrictModeTests {
    @Test("1-to-N: across a block neither side's lastMessage / lastActivityAt moves")
    func groupChannelListStrict() async throws {
        let (gateway, _) = try await Self.strictGateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let id = try carol.createGroup(["alice", "bob"])
        let c1 = try gateway.say(carol, id, "c1")
        _ = try alice.blockResults("user.block", ["bob"])
        let b1 = try gateway.say(bob, id, "b1")

        func last(_ client: RawChatClient) throws -> (id: String?, at: Int?) {
            let view = try client.listedChannel(id)
            return ((view?["lastMessage"] as? [String: Any])?["id"] as? String, view?["lastActivityAt"] as? Int)
        }
        #expect(try last(alice).id == c1["id"] as? String, "alice's list moved for a message she cannot see")
        #expect(try last(alice).at == c1["createdAt"] as? Int)
        #expect(try last(carol).id == b1["id"] as? String)

        let a1 = try gateway.say(alice, id, "a1")
        #expect(try last(bob).id == b1["id"] as? String, "bob's list moved for a message he cannot see")
        #expect(try last(bob).at == b1["createdAt"] as? Int)
        #expect(try last(alice).id == a1["id"] as? String)
        #expect(try last(carol).id == a1["id"] as? String)
    }
}
