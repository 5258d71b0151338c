import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §4 message.send and message.history.
@Suite("Message requests")
struct MessageRequestTests {
    /// A gateway with alice and bob connected and a group channel of the two.
    private func pair(tls: Bool = false, configure: (inout TransportSettings, inout GatewayConfiguration) -> Void = { _, _ in })
        async throws -> (TestGateway, RawChatClient, RawChatClient, String)
    {
        let gateway = try await TestGateway.chat(tls: tls, configure: configure)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])
        return (gateway, alice, bob, try #require(channel["id"] as? String))
    }

    @Test("send, receive live, read history: shapes and order", arguments: [false, true])
    func sendReceiveHistory(tls: Bool) async throws {
        let (gateway, alice, bob, id) = try await pair(tls: tls)
        var sent: [[String: Any]] = []
        for (index, text) in ["first", "second ✓", "third"].enumerated() {
            gateway.clock.advance(by: 1000)  // stays under any per-user rate
            let now = gateway.clock.now()
            let message = try alice.send(id, text)
            #expect(Shapes.keys(message) == Shapes.message, "\(message.keys)")
            #expect(message["channelId"] as? String == id)
            #expect(message["seq"] as? Int == index + 1)
            #expect(message["senderId"] as? String == "alice")
            #expect(message["text"] as? String == text)
            #expect(message["data"] is NSNull)
            #expect(message["clientMessageId"] is NSNull)
            #expect(message["createdAt"] as? Int == Int(now))
            let event = try bob.nextEvent("message.new")
            #expect(event["id"] == nil)
            let data = try #require(event["data"] as? [String: Any])
            #expect(data["id"] as? String == message["id"] as? String)
            #expect(data["seq"] as? Int == index + 1)
            #expect(data["text"] as? String == text)
            sent.append(message)
        }
        let history = try bob.ok("message.history", ["channelId": id])
        #expect(Set(history.keys) == ["messages", "next"])
        let messages = try #require(history["messages"] as? [[String: Any]])
        #expect(messages.texts == ["first", "second ✓", "third"])
        #expect(messages.seqs == [1, 2, 3])
        #expect(messages.ids == sent.ids)
        #expect(messages.allSatisfy { Shapes.keys($0) == Shapes.message })
        let channel = try bob.ok("channel.get", ["channelId": id])
        #expect((channel["lastMessage"] as? [String: Any])?["id"] as? String == sent.last?["id"] as? String)
    }

    @Test("seq increases by one per channel without gaps, across senders and failed sends")
    func seqWithoutGaps() async throws {
        let (gateway, alice, bob, id) = try await pair()
        let other = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        var seqs: [Int] = []
        for round in 0..<4 {
            gateway.clock.advance(by: 1000)
            seqs.append(try alice.send(id, "a\(round)")["seq"] as? Int ?? -1)
            seqs.append(try bob.send(id, "b\(round)")["seq"] as? Int ?? -1)
            // A refused send consumes no seq.
            #expect(try alice.errorCode("message.send", ["channelId": id, "text": ""]) == "ERR_BAD_REQUEST")
        }
        #expect(seqs == Array(1...8))
        #expect(try alice.send(other, "elsewhere")["seq"] as? Int == 1)
        #expect(try bob.fullHistory(id).seqs == Array(1...8))
    }

    @Test("text longer than maxTextLength: ERR_MESSAGE_TOO_LONG, not stored")
    func tooLong() async throws {
        let (gateway, alice, bob, id) = try await pair { _, chat in chat.limits.maxTextLength = 10 }
        defer { withExtendedLifetime(gateway) {} }
        #expect(try alice.send(id, "0123456789")["seq"] as? Int == 1)
        #expect(try alice.send(id, "éééééééééé")["seq"] as? Int == 2)  // 10 characters, 20 bytes
        #expect(try alice.errorCode("message.send", ["channelId": id, "text": "0123456789A"]) == "ERR_MESSAGE_TOO_LONG")
        #expect(try alice.send(id, "ok")["seq"] as? Int == 3)
        #expect(try bob.fullHistory(id).texts == ["0123456789", "éééééééééé", "ok"])
    }

    @Test("empty or missing text, missing channelId: ERR_BAD_REQUEST")
    func badText() async throws {
        let (gateway, alice, _, id) = try await pair()
        defer { withExtendedLifetime(gateway) {} }
        #expect(try alice.errorCode("message.send", ["channelId": id, "text": ""]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("message.send", ["channelId": id]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("message.send", ["text": "hi"]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode("message.send", ["channelId": "c_nope", "text": "hi"]) == "ERR_CHANNEL_NOT_FOUND")
        #expect(try alice.fullHistory(id).isEmpty)
    }

    @Test("data: an object round-trips (reply, event, history); anything else is ERR_BAD_REQUEST")
    func dataObject() async throws {
        let (gateway, alice, bob, id) = try await pair()
        defer { withExtendedLifetime(gateway) {} }
        let data: [String: Any] = ["kind": "image", "size": [640, 480], "nested": ["ok": true, "none": NSNull()], "ratio": 1.5]
        let sent = try alice.send(id, "with data", ["data": data])
        let expected = canonicalJSON(data)
        #expect(canonicalJSON(sent["data"]) == expected)
        let event = try bob.nextEvent("message.new")
        let live = (event["data"] as? [String: Any])?["data"] as? [String: Any]
        #expect(canonicalJSON(live) == expected)
        let stored = try bob.fullHistory(id).first?["data"] as? [String: Any]
        #expect(canonicalJSON(stored) == expected)
        for bad: Any in ["text", 42, [1, 2], true] {
            #expect(try alice.errorCode("message.send", ["channelId": id, "text": "x", "data": bad]) == "ERR_BAD_REQUEST", "\(bad)")
        }
        #expect(try alice.send(id, "empty data", ["data": [String: Any]()])["data"] as? [String: Any] != nil)
        #expect(try bob.fullHistory(id).count == 2)
    }

    @Test("clientMessageId: the same user + id returns the stored message, delivered once")
    func idempotentSend() async throws {
        let (gateway, alice, bob, id) = try await pair()
        let aliceTablet = try await gateway.connect("alice", query: "&device=tablet")
        let first = try alice.send(id, "once", ["clientMessageId": "cm-1"])
        #expect(first["clientMessageId"] as? String == "cm-1")
        #expect(first["seq"] as? Int == 1)
        let again = try alice.send(id, "once", ["clientMessageId": "cm-1"])
        #expect(again["id"] as? String == first["id"] as? String)
        #expect(again["seq"] as? Int == 1)
        let otherDevice = try aliceTablet.send(id, "once (retry)", ["clientMessageId": "cm-1"])
        #expect(otherDevice["id"] as? String == first["id"] as? String)
        #expect(otherDevice["text"] as? String == "once")
        // bob: exactly one message.new for it.
        let events = try bob.takeEvents("message.new")
        #expect(events.count == 1)
        #expect((events.first?["data"] as? [String: Any])?["id"] as? String == first["id"] as? String)
        // The tablet saw it live exactly once too (it was another connection of the sender).
        #expect(try aliceTablet.takeEvents("message.new").count == 1)
        // Another user's same clientMessageId is another message; seq continues without a gap.
        gateway.clock.advance(by: 1000)
        let bobs = try bob.send(id, "bob's", ["clientMessageId": "cm-1"])
        #expect(bobs["id"] as? String != first["id"] as? String)
        #expect(bobs["seq"] as? Int == 2)
        #expect(try alice.send(id, "plain")["seq"] as? Int == 3)
        let history = try alice.fullHistory(id)
        #expect(history.texts == ["once", "bob's", "plain"])
        #expect(history.seqs == [1, 2, 3])
    }

    @Test("clientMessageId retries sent back to back get one message")
    func idempotentPipelined() async throws {
        let (gateway, alice, bob, id) = try await pair()
        defer { withExtendedLifetime(gateway) {} }
        // Three sends with the same id written before any reply is read.
        for n in 1...3 {
            try alice.connection.sendText(#"{"id":\#(100 + n),"type":"message.send","channelId":"\#(id)","text":"burst","clientMessageId":"cm-burst"}"#)
        }
        // Read in request order (a reply read out of turn would be skipped, and its wait
        // time out): the original send's reply comes first, then the retries'.
        var replies: [[String: Any]] = []
        for n in 1...3 { replies.append(try alice.reply(to: 100 + n)) }
        let messages = replies.compactMap { $0["result"] as? [String: Any] }
        #expect(messages.count == 3)
        #expect(Set(messages.ids).count == 1)
        #expect(messages.seqs == [1, 1, 1])
        #expect(try bob.takeEvents("message.new").count == 1)
        #expect(try bob.fullHistory(id).count == 1)
        // Once stored, nothing of the send stays in memory (the store answers later retries).
        let service = try #require(gateway.server.router.chat)
        #expect(service.queue.sync { service.engine.clientMessagesInFlight == 0 })
        let later = try alice.send(id, "burst", ["clientMessageId": "cm-burst"])
        #expect(later["seq"] as? Int == 1)
        #expect(service.queue.sync { service.engine.clientMessagesInFlight == 0 })
    }

    @Test("message.history: beforeSeq, afterSeq, neither, limit; membership and existence")
    func history() async throws {
        let (gateway, alice, bob, id) = try await pair()
        let carol = try await gateway.connect("carol")
        for n in 1...7 {
            gateway.clock.advance(by: 1000)
            try (n.isMultiple(of: 2) ? bob : alice).send(id, "m\(n)")
        }
        func seqs(_ fields: [String: Any]) throws -> [Int] {
            var all = fields
            all["channelId"] = id
            return (try alice.ok("message.history", all)["messages"] as? [[String: Any]] ?? []).seqs
        }
        #expect(try seqs([:]) == [1, 2, 3, 4, 5, 6, 7])
        #expect(try seqs(["limit": 3]) == [5, 6, 7])
        #expect(try seqs(["beforeSeq": 5, "limit": 3]) == [2, 3, 4])
        #expect(try seqs(["beforeSeq": 3]) == [1, 2])
        #expect(try seqs(["beforeSeq": 1]) == [])
        #expect(try seqs(["afterSeq": 2, "limit": 3]) == [3, 4, 5])
        #expect(try seqs(["afterSeq": 5]) == [6, 7])
        #expect(try seqs(["afterSeq": 7]) == [])
        #expect(try seqs(["afterSeq": 0, "limit": 1]) == [1])
        #expect(try alice.errorCode("message.history", ["channelId": id, "limit": 0]) == "ERR_INVALID_LIMIT")
        #expect(try alice.errorCode("message.history", ["channelId": id, "limit": 101]) == "ERR_INVALID_LIMIT")
        #expect(try alice.errorCode("message.history", ["channelId": "c_missing"]) == "ERR_CHANNEL_NOT_FOUND")
        let outsider = try carol.errorCode("message.history", ["channelId": id])
        #expect(outsider == "ERR_NOT_A_MEMBER" || outsider == "ERR_CHANNEL_NOT_FOUND")
        // In an open channel carol can see but has not joined: ERR_NOT_A_MEMBER.
        let open = try #require(try alice.ok("channel.create", ["channelType": "open"])["id"] as? String)
        #expect(try carol.errorCode("message.history", ["channelId": open]) == "ERR_NOT_A_MEMBER")
        #expect(try carol.errorCode("message.send", ["channelId": open, "text": "hi"]) == "ERR_NOT_A_MEMBER")
    }
}
