import ChatCore
import Testing
@testable import Gateway

/// PROTOCOL.md §14 read state over real sockets: `channel.markRead` moves a member's mark
/// (never back, never past the newest message) and answers with the unread count; `Channel`
/// carries `lastReadSeq` and `unreadCount` as the viewer sees them (own and hidden messages
/// never count); `channel.read` reaches the others, except across a block as §14 says; marks
/// are stored and survive a restart.
@Suite("Read state")
struct ReadStateTests {
    private static func read(_ event: [String: Any]) -> String {
        let data = event["data"] as? [String: Any] ?? [:]
        return "\(data["userId"] as? String ?? "?") \(data["lastReadSeq"] as? Int ?? -1)"
    }

    private static func state(_ channel: [String: Any]?) -> [Int] {
        [channel?["lastReadSeq"] as? Int ?? -1, channel?["unreadCount"] as? Int ?? -1]
    }

    @Test func marksMoveForwardOnlyAndCountWhatOthersSaid() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let group = try alice.createGroup(["bob", "carol"])
        #expect(Self.state(try alice.listedChannel(group)) == [0, 0])
        for text in ["one", "two", "three"] { try bob.send(group, text) }
        try alice.send(group, "mine")  // own messages never count
        #expect(Self.state(try alice.listedChannel(group)) == [0, 3])
        #expect(Self.state(try alice.ok("channel.get", ["channelId": group])) == [0, 3])
        #expect(Self.state(try bob.listedChannel(group)) == [0, 1], "bob: alice's message only")

        let marked = try alice.ok("channel.markRead", ["channelId": group, "seq": 2])
        #expect(marked["channelId"] as? String == group)
        #expect([marked["lastReadSeq"] as? Int, marked["unreadCount"] as? Int] == [2, 1])
        #expect(Self.read(try bob.nextEvent("channel.read")) == "alice 2")
        #expect(Self.read(try carol.nextEvent("channel.read")) == "alice 2")
        #expect(try alice.expectNoEvent("channel.read"), "not to the reader's own connection that asked")

        let back = try alice.ok("channel.markRead", ["channelId": group, "seq": 1])
        #expect([back["lastReadSeq"] as? Int, back["unreadCount"] as? Int] == [2, 1], "a mark never moves back")
        let past = try alice.ok("channel.markRead", ["channelId": group, "seq": 99])
        #expect([past["lastReadSeq"] as? Int, past["unreadCount"] as? Int] == [4, 0], "never past the newest message")
        #expect(Self.state(try alice.listedChannel(group)) == [4, 0])

        #expect(try alice.errorCode("channel.markRead", ["channelId": "c_nope", "seq": 1]) == "ERR_CHANNEL_NOT_FOUND")
        #expect(try alice.errorCode("channel.markRead", ["channelId": group, "seq": -1]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("channel.markRead", ["channelId": group]) == "ERR_BAD_REQUEST")
    }

    @Test func aNewMemberStartsWithEverythingRead() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let group = try alice.createGroup(["bob"])
        for text in ["one", "two"] { try alice.send(group, text) }
        _ = try alice.ok("channel.invite", ["channelId": group, "userIds": ["carol"]])
        let carol = try await gateway.connect("carol")
        #expect(Self.state(try carol.listedChannel(group)) == [2, 0])
        try bob.send(group, "three")
        #expect(Self.state(try carol.listedChannel(group)) == [2, 1])
    }

    @Test(arguments: [DeliveryPolicy.Mode.standard, .strict])
    func hiddenMessagesNeverCountAlsoAfterUnblocking(mode: DeliveryPolicy.Mode) async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.blocking.mode = mode }
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let pair = try alice.createGroup(["bob"])
        let group = try alice.createGroup(["bob", "carol"])
        try bob.send(pair, "before")
        _ = try alice.blockResults("user.block", ["bob"])
        try bob.send(pair, "hidden 1")
        try bob.send(pair, "hidden 2")
        try bob.send(group, "in the group")
        try carol.send(group, "carol")
        // Standard: only what was said before the block. Strict: nothing of bob's while the block stands,
        // as in alice's history.
        #expect(Self.state(try alice.listedChannel(pair)) == [0, mode == .standard ? 1 : 0])
        #expect(try alice.fullHistory(pair).count == (mode == .standard ? 1 : 0))
        // A group message of a blocked user counts in standard mode (it moves the channel list, §5), not in strict.
        #expect(Self.state(try alice.listedChannel(group)) == [0, mode == .standard ? 2 : 1])
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(Self.state(try alice.listedChannel(pair)) == [0, 1], "the 1-to-1 messages sent during the block stay hidden")
        // Strict: bob's group message is back in alice's history after the unblock, so it counts again.
        #expect(Self.state(try alice.listedChannel(group)) == [0, 2])
        #expect(try alice.fullHistory(group).count == 2)
        try bob.send(pair, "after")
        #expect(Self.state(try alice.listedChannel(pair)) == [0, 2])
        let marked = try alice.ok("channel.markRead", ["channelId": pair, "seq": 3])
        #expect([marked["lastReadSeq"] as? Int, marked["unreadCount"] as? Int] == [3, 1], "seq 4 is after the mark")
    }

    @Test(arguments: [DeliveryPolicy.Mode.standard, .strict])
    func theBlockersReadMarksNeverReachTheBlockedUser(mode: DeliveryPolicy.Mode) async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.blocking.mode = mode }
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let aliceOther = try await gateway.connect("alice", query: "&device=other")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let pair = try alice.createGroup(["bob"])
        let group = try alice.createGroup(["bob", "carol"])
        try bob.send(pair, "hi")
        try bob.send(group, "hi all")
        _ = try alice.blockResults("user.block", ["bob"])
        _ = try alice.ok("channel.markRead", ["channelId": pair, "seq": 1])
        _ = try alice.ok("channel.markRead", ["channelId": group, "seq": 1])
        #expect(Self.read(try carol.nextEvent("channel.read")) == "alice 1")
        #expect(Self.read(try aliceOther.nextEvent("channel.read")) == "alice 1", "the reader's other devices follow")
        let bobSaw = try bob.takeEvents("channel.read").map(Self.read)
        // 1-to-1: never; a group: standard yes, strict no.
        #expect(bobSaw == (mode == .standard ? ["alice 1"] : []), "\(bobSaw)")
        // The blocked user's own marks still reach the blocker in standard mode (§14 names only the blocker's).
        _ = try bob.ok("channel.markRead", ["channelId": pair, "seq": 1])
        let aliceSaw = try alice.takeEvents("channel.read").map(Self.read)
        #expect(aliceSaw == (mode == .standard ? ["bob 1"] : []), "\(aliceSaw)")
    }

    @Test func aReadersEventsArePacedAndTheLastMarkArrives() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let pair = try alice.createGroup(["bob"])
        for text in ["one", "two", "three"] { try alice.send(pair, text) }
        for seq in 1...3 { _ = try bob.ok("channel.markRead", ["channelId": pair, "seq": seq]) }
        #expect(Self.read(try alice.nextEvent("channel.read")) == "bob 1")
        // Within a second of the first, the rest go out once, with the newest mark.
        #expect(Self.read(try alice.nextEvent("channel.read")) == "bob 3")
        #expect(try alice.expectNoEvent("channel.read"))
    }

    @Test func marksAreStoredAndSurviveARestart() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        var pair = ""
        do {
            let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            pair = try alice.createGroup(["bob"])
            for text in ["one", "two", "three", "four"] { try bob.send(pair, text) }
            try alice.send(pair, "mine")
            try bob.send(pair, "five")
            _ = try alice.ok("channel.markRead", ["channelId": pair, "seq": 2])
            #expect(Self.state(try alice.listedChannel(pair)) == [2, 3])
        }
        let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        #expect(Self.state(try alice.listedChannel(pair)) == [2, 3], "own message 5 still does not count")
        #expect(Self.state(try bob.listedChannel(pair)) == [0, 1])
    }
}
