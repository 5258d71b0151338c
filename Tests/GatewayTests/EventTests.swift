import Foundation
import Testing
import WebSocket
@testable import Gateway

/// PROTOCOL.md §7 events.
@Suite("Events")
struct EventTests {
    @Test("message.new reaches every member connection but the sending one (the sender's other device included)",
          arguments: [false, true])
    func messageNewFanOut(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let alicePhone = try await gateway.connect("alice", query: "&device=phone")
        let aliceLaptop = try await gateway.connect("alice", query: "&device=laptop")
        let bobPhone = try await gateway.connect("bob", query: "&device=phone")
        let bobLaptop = try await gateway.connect("bob", query: "&device=laptop")
        let carol = try await gateway.connect("carol")
        let id = try #require(try alicePhone.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        let sent = try alicePhone.send(id, "to all devices")
        for client in [aliceLaptop, bobPhone, bobLaptop] {
            let event = try client.nextEvent("message.new")
            #expect(event["type"] as? String == "event")
            #expect(event["id"] == nil)
            let data = try #require(event["data"] as? [String: Any])
            #expect(Shapes.keys(data) == Shapes.message)
            #expect(data["id"] as? String == sent["id"] as? String)
            #expect(data["text"] as? String == "to all devices")
            #expect(try client.takeEvents("message.new").isEmpty)  // exactly once
        }
        #expect(try alicePhone.takeEvents("message.new").isEmpty)
        #expect(try carol.takeEvents("message.new").isEmpty)
        // A connection opened after the channel exists receives it too.
        let bobTablet = try await gateway.connect("bob", query: "&device=tablet")
        gateway.clock.advance(by: 1000)
        let second = try aliceLaptop.send(id, "late joiner device")
        #expect((try bobTablet.nextEvent("message.new")["data"] as? [String: Any])?["id"] as? String == second["id"] as? String)
        #expect((try alicePhone.nextEvent("message.new")["data"] as? [String: Any])?["id"] as? String == second["id"] as? String)
        #expect(try aliceLaptop.takeEvents("message.new").isEmpty)
    }

    @Test("channel.updated to members on create, invite, join and update")
    func channelUpdated() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let aliceOther = try await gateway.connect("alice", query: "&device=other")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let dave = try await gateway.connect("dave")

        // create: the invitee and the creator's other connection.
        let id = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "name": "team"])["id"] as? String)
        for client in [bob, aliceOther] {
            let data = try #require(try client.nextEvent("channel.updated")["data"] as? [String: Any])
            #expect(Shapes.keys(data) == Shapes.channel)
            #expect(data["id"] as? String == id)
            #expect(data["members"] as? [String] == ["alice", "bob"])
        }
        #expect(try carol.takeEvents("channel.updated").isEmpty)

        // invite: old members and the new one.
        _ = try alice.ok("channel.invite", ["channelId": id, "userIds": ["carol"]])
        for client in [bob, carol, aliceOther] {
            let data = try #require(try client.nextEvent("channel.updated")["data"] as? [String: Any])
            #expect(data["id"] as? String == id)
            #expect(data["members"] as? [String] == ["alice", "bob", "carol"])
            #expect(data["isOneToOne"] as? Bool == false)
        }
        // The invitee now receives messages live.
        let sent = try alice.send(id, "welcome carol")
        #expect((try carol.nextEvent("message.new")["data"] as? [String: Any])?["id"] as? String == sent["id"] as? String)

        // update: every member.
        _ = try bob.ok("channel.update", ["channelId": id, "name": "renamed"])
        for client in [alice, aliceOther, carol] {
            let data = try #require(try client.nextEvent("channel.updated")["data"] as? [String: Any])
            #expect(data["id"] as? String == id)
            #expect(data["name"] as? String == "renamed")
        }
        #expect(try dave.takeEvents("channel.updated").isEmpty)

        // join (open channel): the newcomer's other connections hear of it, the participants do not
        // (a count, not a list: OpenChannelFanOutTests).
        let open = try #require(try alice.ok("channel.create", ["channelType": "open", "name": "lobby"])["id"] as? String)
        let daveOther = try await gateway.connect("dave", query: "&device=other")
        _ = try dave.ok("channel.join", ["channelId": open])
        let data = try #require(try daveOther.nextEvent("channel.updated")["data"] as? [String: Any])
        #expect(data["id"] as? String == open)
        #expect(data["members"] as? [String] == ["dave"] && data["memberCount"] as? Int == 2)
        _ = try dave.send(open, "hello lobby")
        _ = try alice.nextEvent("message.new")
        #expect(!alice.takeBufferedEvents("channel.updated").contains { ($0["data"] as? [String: Any])?["id"] as? String == open })
    }

    @Test("session.expiring 60 s before exp, then close 4001 at exp (manual clock)", arguments: [false, true])
    func sessionExpiry(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let issuedAt = gateway.clock.now()
        let token = try await gateway.token(for: "alice", ttlSeconds: 120)
        let alice = try await gateway.connect(token: token)
        let other = try await gateway.connect("alice", query: "&device=long-lived")
        #expect(try alice.takeEvents("session.expiring").isEmpty)
        gateway.clock.advance(by: 61_000)
        let event = try alice.nextEvent("session.expiring")  // the once-a-second sweep; bounded read
        let expiresAt = try #require((event["data"] as? [String: Any])?["expiresAt"] as? Int)
        #expect(expiresAt <= Int(issuedAt) + 120_000 && expiresAt > Int(issuedAt) + 118_000)
        // Still open and usable until exp; sent once.
        #expect(try alice.ok("me")["user"] != nil)
        gateway.clock.advance(by: 60_000)
        #expect(try alice.connection.nextClose() == CloseCode.tokenExpired)
        #expect(alice.takeBufferedEvents("session.expiring").isEmpty)
        // A connection with a longer token is untouched.
        #expect(try other.ok("me")["user"] != nil)
        #expect(try other.takeEvents("session.expiring").isEmpty)
    }
}
