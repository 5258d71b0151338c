import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §4: a reconnecting client catches up with `afterSeq` and sees every message exactly once.
@Suite("Reconnect and catch-up")
struct ReconnectTests {
    @Test("a client that drops mid-stream catches up with afterSeq = last seen seq; every message once",
          arguments: [false, true])
    func dropAndCatchUp(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let alice = try await gateway.connect("alice")
        var bob: RawChatClient? = try await gateway.connect("bob")
        let id = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        var sentIDs: [String] = []
        func aliceSends(_ range: ClosedRange<Int>) throws {
            for n in range {
                gateway.clock.advance(by: 1000)  // under any per-user rate
                sentIDs.append(try #require(try alice.send(id, "m\(n)")["id"] as? String))
            }
        }
        try aliceSends(1...6)
        // bob reads only the first three live messages, then his socket dies with the rest unread.
        var seen: [[String: Any]] = []
        for _ in 1...3 {
            seen.append(try #require(try bob?.nextEvent("message.new")["data"] as? [String: Any]))
        }
        // bob also fired a send whose reply he never read (to be retried after reconnect).
        try bob?.connection.sendText(#"{"id":999,"type":"message.send","channelId":"\#(id)","text":"from bob","clientMessageId":"bob-1"}"#)
        let stored = try #require(try alice.nextEvent("message.new")["data"] as? [String: Any])
        #expect(stored["clientMessageId"] as? String == "bob-1")
        bob?.connection.dropConnection()
        bob = nil
        try aliceSends(7...12)  // while bob is away

        let back = try await gateway.connect("bob", query: "&device=reconnected")
        // Retrying the unacknowledged send returns the stored message, not a second one.
        let retried = try back.send(id, "from bob", ["clientMessageId": "bob-1"])
        #expect(retried["id"] as? String == stored["id"] as? String)
        #expect(retried["seq"] as? Int == 7)
        let lastSeen = try #require(seen.last?["seq"] as? Int)
        #expect(lastSeen == 3)
        var after = lastSeen
        while true {
            let page = try back.ok("message.history", ["channelId": id, "afterSeq": after, "limit": 4])
            let messages = try #require(page["messages"] as? [[String: Any]])
            if messages.isEmpty { break }
            seen += messages
            after = messages.last?["seq"] as? Int ?? after
        }
        // And live again from here.
        try aliceSends(13...14)
        for _ in 1...2 { seen.append(try #require(try back.nextEvent("message.new")["data"] as? [String: Any])) }

        let total = 14 + 1
        #expect(seen.seqs == Array(1...total), "\(seen.seqs)")
        #expect(Set(seen.ids).count == total)
        let fromAlice = seen.filter { $0["senderId"] as? String == "alice" }
        #expect(fromAlice.ids == sentIDs)
        #expect(fromAlice.texts == (1...14).map { "m\($0)" })
        let fromBob = seen.filter { $0["senderId"] as? String == "bob" }
        #expect(fromBob.ids == [retried["id"] as? String ?? "?"])
        #expect(try back.takeEvents("message.new").isEmpty)
        #expect(try alice.fullHistory(id).count == total)
    }
}
