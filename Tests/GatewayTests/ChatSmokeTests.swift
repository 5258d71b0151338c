import Testing
@testable import Gateway

@Suite("Chat smoke")
struct ChatSmokeTests {
    @Test("two users create a channel, exchange a message and read history")
    func basicFlow() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])
        let channelID = try #require(channel["id"] as? String)
        #expect(channel["isOneToOne"] as? Bool == true)
        _ = try bob.nextEvent("channel.updated")
        let sent = try alice.ok("message.send", ["channelId": channelID, "text": "hi bob"])
        #expect(sent["seq"] as? Int == 1)
        let event = try bob.nextEvent("message.new")
        let data = try #require(event["data"] as? [String: Any])
        #expect(data["text"] as? String == "hi bob")
        let history = try bob.ok("message.history", ["channelId": channelID])
        let messages = try #require(history["messages"] as? [[String: Any]])
        #expect(messages.map { $0["text"] as? String } == ["hi bob"])
    }

    @Test("members with permessage-deflate share one compressed frame per message; plain members get it uncompressed",
          arguments: [false, true])
    func deflateFanOut(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob", deflate: true)
        let carol = try await gateway.connect("carol", deflate: true)
        let channel = try alice.ok("channel.create", ["channelType": "group", "name": "z", "userIds": ["bob", "carol"]])
        let channelID = try #require(channel["id"] as? String)
        _ = try bob.nextEvent("channel.updated")
        _ = try carol.nextEvent("channel.updated")
        // Two messages: each must decompress on its own (no context carried from the first).
        let texts = [String(repeating: "compress me ", count: 40), "second \u{1F600} message"]
        for text in texts { try alice.send(channelID, text) }
        for member in [bob, carol] {
            for text in texts {
                let event = try member.nextEvent("message.new")
                #expect((event["data"] as? [String: Any])?["text"] as? String == text)
            }
        }
        // A deflate member's own send still gets its ok and reaches the others.
        try bob.send(channelID, "from bob")
        #expect(((try alice.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "from bob")
        #expect(((try carol.nextEvent("message.new"))["data"] as? [String: Any])?["text"] as? String == "from bob")
    }
}
