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
}
