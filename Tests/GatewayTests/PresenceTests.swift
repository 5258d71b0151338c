import ChatCore
import Testing
@testable import Gateway

/// PROTOCOL.md §14 presence on one node, over real sockets: `presence.subscribe` answers
/// the current state and brings `user.presence` on every online/offline change (a user
/// is online while one connection lives), until `presence.unsubscribe` or the close; at
/// most 1,000 subscriptions per connection; in strict mode a blocked pair sees each
/// other offline, with no events.
@Suite("Presence")
struct PresenceTests {
    private static func state(_ result: [String: Any]) -> [String: Bool] {
        var states: [String: Bool] = [:]
        for user in result["users"] as? [[String: Any]] ?? [] {
            if let id = user["userId"] as? String { states[id] = user["online"] as? Bool }
        }
        return states
    }

    private static func presence(_ event: [String: Any]) -> (user: String, online: Bool)? {
        guard let data = event["data"] as? [String: Any], let user = data["userId"] as? String,
              let online = data["online"] as? Bool else { return nil }
        return (user, online)
    }

    @Test func subscribeAnswersTheStateAndEveryChangeFollowsUntilUnsubscribed() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["alice", "carol"])
        let bob = try await gateway.connect("bob")
        let state = Self.state(try bob.ok("presence.subscribe", ["userIds": ["alice", "carol"]]))
        #expect(state == ["alice": false, "carol": false])

        let phone = try await gateway.connect("alice", query: "&device=phone")
        #expect(Self.presence(try bob.nextEvent("user.presence")).map { "\($0.user) \($0.online)" } == "alice true")
        let laptop = try await gateway.connect("alice", query: "&device=laptop")
        phone.connection.dropConnection()
        #expect(try bob.expectNoEvent("user.presence"), "alice is still online on her laptop")
        #expect(Self.state(try bob.ok("presence.subscribe", ["userIds": ["alice"]])) == ["alice": true])
        laptop.connection.dropConnection()
        let offline = try bob.nextEvent("user.presence")
        #expect(Self.presence(offline).map { "\($0.user) \($0.online)" } == "alice false")
        #expect(((offline["data"] as? [String: Any])?["lastSeenAt"] as? Int ?? 0) > 0)

        _ = try bob.ok("presence.unsubscribe", ["userIds": ["alice"]])
        _ = try await gateway.connect("alice")
        #expect(try bob.expectNoEvent("user.presence"), "unsubscribed")
        _ = try await gateway.connect("carol")
        #expect(Self.presence(try bob.nextEvent("user.presence"))?.user == "carol", "carol is still followed")
    }

    @Test func requestsAreChecked() async throws {
        let gateway = try await TestGateway.chat()
        let bob = try await gateway.connect("bob")
        #expect(try bob.errorCode("presence.subscribe", ["userIds": ["ghost"]]) == "ERR_UID_NOT_FOUND")
        #expect(try bob.errorCode("presence.subscribe", ["userIds": []]) == "ERR_BAD_REQUEST")
        #expect(try bob.errorCode("presence.subscribe", ["userIds": (0...100).map { "u\($0)" }]) == "ERR_TOO_MANY_IDS")
        #expect(try bob.errorCode("presence.unsubscribe", [:]) == "ERR_BAD_REQUEST")
    }

    @Test func atMostAThousandSubscriptionsPerConnection() async throws {
        let gateway = try await TestGateway.chat()
        let ids = (0..<1_001).map { "p\($0)" }
        try await gateway.createUsers(ids)
        let bob = try await gateway.connect("bob")
        for start in stride(from: 0, to: 1_000, by: 100) {
            _ = try bob.ok("presence.subscribe", ["userIds": Array(ids[start..<start + 100])])
        }
        _ = try bob.ok("presence.subscribe", ["userIds": ["p5"]])  // already followed: not one more
        #expect(try bob.errorCode("presence.subscribe", ["userIds": ["p1000"]]) == "ERR_BAD_REQUEST")
        _ = try bob.ok("presence.unsubscribe", ["userIds": ["p0"]])
        _ = try bob.ok("presence.subscribe", ["userIds": ["p1000"]])
        let other = try await gateway.connect("bob", query: "&device=other")
        _ = try other.ok("presence.subscribe", ["userIds": ["p1000"]])  // the cap is per connection
    }

    @Test func theConnectionsClosingEndsItsSubscriptions() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["alice"])
        let bob = try await gateway.connect("bob")
        _ = try bob.ok("presence.subscribe", ["userIds": ["alice"]])
        bob.connection.dropConnection()
        let carol = try await gateway.connect("carol")
        _ = try await gateway.connect("alice")
        // carol did not subscribe: she hears nothing; and nothing went to bob's closed connection (no crash).
        #expect(try carol.expectNoEvent("user.presence"))
        #expect(try carol.ok("presence.subscribe", ["userIds": ["alice"]]).isEmpty == false)
    }

    @Test(arguments: [DeliveryPolicy.Mode.standard, .strict])
    func inStrictModeABlockedPairSeesEachOtherOffline(mode: DeliveryPolicy.Mode) async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.blocking.mode = mode }
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        for (viewer, target) in [(alice, "bob"), (bob, "alice")] {
            #expect(Self.state(try viewer.ok("presence.subscribe", ["userIds": [target, "carol"]]))
                        == [target: mode != .strict, "carol": true])
        }
        carol.connection.dropConnection()
        _ = try alice.nextEvent("user.presence")
        _ = try bob.nextEvent("user.presence")
        let dave = try await gateway.connect("dave")
        _ = try dave.ok("presence.subscribe", ["userIds": ["alice"]])
        alice.connection.dropConnection()
        // dave (no block) hears it: the change has gone out by then.
        #expect(Self.presence(try dave.nextEvent("user.presence")).map { "\($0.user) \($0.online)" } == "alice false")
        if mode == .strict {
            #expect(try bob.expectNoEvent("user.presence"), "strict: bob hears nothing of alice")
        } else {
            #expect(Self.presence(try bob.nextEvent("user.presence")).map { "\($0.user) \($0.online)" } == "alice false")
        }
    }
}
