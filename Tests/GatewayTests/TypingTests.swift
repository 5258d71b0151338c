import ChatCore
import Testing
@testable import Gateway

/// PROTOCOL.md §14 typing over real sockets, with the §5 block rules: a blocked user's
/// typing never reaches the blocker in a 1-to-1 or on a `hideBlocked=1` connection, and in
/// strict mode never between the pair; a message ends the sender's typing with `typing.stop`.
@Suite("Typing")
struct TypingTests {
    private static func typing(_ event: [String: Any]) -> String {
        let data = event["data"] as? [String: Any] ?? [:]
        return "\(event["event"] as? String ?? "?") \(data["userId"] as? String ?? "?")"
    }

    @Test func typingReachesTheOthersAndAMessageEndsIt() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        _ = try bob.nextEvent("channel.updated")
        #expect(try bob.ok("typing.start", ["channelId": channel]).isEmpty)
        #expect(Self.typing(try alice.nextEvent("typing.start")) == "typing.start bob")
        #expect(try bob.ok("typing.start", ["channelId": channel]).isEmpty)  // within 2 s: answered, not forwarded
        _ = try bob.send(channel, "hi")
        _ = try alice.nextEvent("message.new")
        #expect(Self.typing(try alice.nextEvent("typing.stop")) == "typing.stop bob")
        #expect(try alice.expectNoEvent("typing.start"), "the second start was not forwarded")
        #expect(try bob.expectNoEvent("typing.start"), "nobody hears their own typing")
        #expect(try bob.errorCode("typing.start", ["channelId": "c_nope"]) == "ERR_CHANNEL_NOT_FOUND")
    }

    @Test("start/stop alternating at 45 requests a second for 3 s: two typing.start reach the others, every request answered")
    func stopDoesNotResetTheForwardingInterval() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        _ = try bob.nextEvent("channel.updated")
        // Each request is answered before the clock moves on (the gateway reads it when it decides).
        for _ in 0..<68 {
            #expect(try bob.ok("typing.start", ["channelId": channel]).isEmpty)
            #expect(try bob.ok("typing.stop", ["channelId": channel]).isEmpty)
            gateway.clock.advance(by: 44)
        }
        // A message after them all: what reached alice before it is everything the requests sent.
        _ = try bob.send(channel, "marker")
        _ = try alice.nextEvent("message.new")
        let starts = alice.takeBufferedEvents("typing.start")
        let stops = alice.takeBufferedEvents("typing.stop")
        #expect(starts.count == 2, "\(starts.count) typing.start forwarded")
        #expect(stops.count == 2, "\(stops.count) typing.stop forwarded")
    }

    @Test(arguments: [DeliveryPolicy.Mode.standard, .strict])
    func aBlockedUsersTypingNeverReachesTheBlocker(mode: DeliveryPolicy.Mode) async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.blocking.mode = mode }
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let aliceHiding = try await gateway.connect("alice", query: "&device=hiding&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let oneToOne = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        let group = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"]])["id"] as? String)
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        _ = try bob.ok("typing.start", ["channelId": oneToOne])
        _ = try bob.ok("typing.start", ["channelId": group])
        // carol's typing comes after bob's on every connection: what bob's would have reached by then, it has.
        _ = try carol.ok("typing.start", ["channelId": group])
        #expect(Self.typing(try aliceHiding.nextEvent("typing.start")) == "typing.start carol")
        #expect(Self.typing(try alice.nextEvent("typing.start")) == (mode == .standard ? "typing.start bob" : "typing.start carol"),
                "standard: bob's typing in the group reaches alice's ordinary connection; never in the 1-to-1")
        let rest = alice.takeBufferedEvents("typing.start").map(Self.typing) + aliceHiding.takeBufferedEvents("typing.start").map(Self.typing)
        #expect(!rest.contains("typing.start bob") || mode == .standard && rest == ["typing.start carol"], "\(rest)")
        // And the other way: in strict mode bob does not see alice typing either.
        _ = try alice.ok("typing.start", ["channelId": group])
        _ = try carol.ok("typing.stop", ["channelId": group])
        let seenByBob = try bob.nextEvent("typing.stop")
        #expect(Self.typing(seenByBob) == "typing.stop carol")
        let bobSaw = bob.takeBufferedEvents("typing.start").map(Self.typing)
        #expect(bobSaw.contains("typing.start alice") == (mode == .standard), "\(bobSaw)")
    }

    private static func list(_ event: [String: Any]) -> [String] {
        (event["data"] as? [String: Any])?["userIds"] as? [String] ?? ["?"]
    }

    @Test("above limits.typingListAboveMembers a channel hears typing as typing.users lists; in strict mode the blocker's list never moves for the blocked typist")
    func largeChannelsHearTypingAsLists() async throws {
        let gateway = try await TestGateway.chat { _, chat in
            chat.limits.typingListAboveMembers = 2
            chat.blocking.mode = .strict
        }
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let group = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"]])["id"] as? String)
        _ = try bob.nextEvent("channel.updated")
        _ = try carol.nextEvent("channel.updated")
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        #expect(try bob.ok("typing.start", ["channelId": group]).isEmpty)
        let first = try carol.nextEvent("typing.users")
        #expect(Self.list(first) == ["bob"])
        #expect((first["data"] as? [String: Any])?["count"] as? Int == 1)
        #expect(Self.list(try bob.nextEvent("typing.users")) == ["bob"], "the list names the receiving user too")
        // carol within the half second: her start waits for its end and goes out with bob's.
        #expect(try carol.ok("typing.start", ["channelId": group]).isEmpty)
        gateway.clock.advance(by: 500)
        #expect(Self.list(try bob.nextEvent("typing.users")) == ["bob", "carol"])
        #expect(Self.list(try carol.nextEvent("typing.users")) == ["bob", "carol"])
        #expect(Self.list(try alice.nextEvent("typing.users")) == ["carol"], "alice's first list: carol only")
        #expect(alice.takeBufferedEvents("typing.users").isEmpty)
        #expect(try alice.expectNoEvent("typing.start"), "no per-user events in a listing channel")
        // bob's message ends his typing: the others' lists drop him; alice's did not change, so she gets none.
        gateway.clock.advance(by: 500)
        _ = try bob.send(group, "hi")
        _ = try carol.nextEvent("message.new")
        #expect(Self.list(try carol.nextEvent("typing.users")) == ["carol"])
        #expect(try alice.expectNoEvent("typing.users"), "bob's stop does not move alice's list")
    }
}
