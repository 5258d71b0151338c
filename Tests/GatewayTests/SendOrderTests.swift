import Foundation
import Testing
@testable import Gateway

/// A connection's sends keep its order (PROTOCOL.md §2, §4): pipelined sends are stored,
/// acknowledged and rated in the order they were sent, whether or not they carry a
/// `clientMessageId` (whose lookup answers in any order), and so are a reconnect's retries.
@Suite("Send order")
struct SendOrderTests {
    private func pair(rate: Int = 0) async throws -> (TestGateway, RawChatClient, RawChatClient, String) {
        let gateway = try await TestGateway.chat { _, chat in
            chat.limits.userMessagesPerSecond = rate
            chat.limits.userMessageBurst = 5
        }
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        return (gateway, alice, bob, channel)
    }

    @Test("ten rounds of six pipelined sends, tagged, untagged and mixed: stored, acknowledged and delivered in order")
    func pipelinedSendsKeepOrder() async throws {
        let (gateway, alice, bob, channel) = try await pair()
        defer { withExtendedLifetime(gateway) {} }
        var expected: [String] = []
        for round in 0..<10 {
            var fired: [Int] = []
            var texts: [String] = []
            for index in 0..<6 {
                let text = "r\(round)-\(index)"
                var fields: [String: Any] = ["channelId": channel, "text": text]
                // Rounds 0–3 tag every send, 4–6 none, 7–9 every other one.
                if round < 4 || (round >= 7 && index % 2 == 0) { fields["clientMessageId"] = "c-\(round)-\(index)" }
                fired.append(try alice.fire("message.send", fields))
                texts.append(text)
            }
            let replies = try alice.repliesInArrivalOrder(count: fired.count)
            #expect(replies.compactMap { $0["id"] as? Int } == fired, "round \(round): acknowledged out of order")
            let stored = replies.compactMap { $0["result"] as? [String: Any] }
            #expect(stored.texts == texts, "round \(round): \(stored.texts)")
            #expect(stored.seqs == stored.seqs.sorted(), "round \(round): seqs \(stored.seqs)")
            expected += texts
        }
        #expect(try bob.fullHistory(channel).texts == expected)
        var live: [[String: Any]] = []
        while live.count < expected.count {
            live.append(try #require(try bob.nextEvent("message.new")["data"] as? [String: Any]))
        }
        #expect(live.texts == expected)
    }

    @Test("a burst of tagged sends past the rate: the first five are stored, the last ones refused")
    func rateRefusesTheLastOfABurst() async throws {
        let (gateway, alice, bob, channel) = try await pair(rate: 5)
        defer { withExtendedLifetime(gateway) {} }
        for round in 0..<5 {
            gateway.clock.advance(by: 2_000)  // a full bucket each round
            var fired: [Int] = []
            for index in 0..<8 {
                fired.append(try alice.fire("message.send", ["channelId": channel, "text": "r\(round)-\(index)",
                                                             "clientMessageId": "c-\(round)-\(index)"]))
            }
            // A refusal needs no commit, so it may arrive before the oks of earlier sends; which
            // sends are refused, and the order of the oks, follow the order sent.
            let replies = try alice.repliesInArrivalOrder(count: fired.count)
            let refused = replies.filter { $0["type"] as? String == "error" }.compactMap { $0["id"] as? Int }
            #expect(refused.sorted() == Array(fired.suffix(3)), "round \(round)")
            #expect(replies.compactMap { $0["result"] as? [String: Any] }.texts == (0..<5).map { "r\(round)-\($0)" })
        }
        #expect(try bob.fullHistory(channel).count == 25)
    }

    @Test("a reconnect's retries, some already stored: answered and stored in order, each message once")
    func retriesAfterReconnectKeepOrder() async throws {
        let (gateway, alice, bob, channel) = try await pair()
        // The first connection sends three tagged messages and is cut before it reads a reply.
        for index in 0..<3 {
            _ = try alice.fire("message.send", ["channelId": channel, "text": "m\(index)", "clientMessageId": "c\(index)"])
        }
        #expect(try alice.repliesInArrivalOrder(count: 3).count == 3)
        alice.connection.dropConnection()
        let again = try await gateway.connect("alice")
        var fired: [Int] = []
        for index in 0..<8 {
            fired.append(try again.fire("message.send", ["channelId": channel, "text": "m\(index)", "clientMessageId": "c\(index)"]))
        }
        let replies = try again.repliesInArrivalOrder(count: fired.count)
        #expect(replies.compactMap { $0["id"] as? Int } == fired)
        let stored = replies.compactMap { $0["result"] as? [String: Any] }
        #expect(stored.texts == (0..<8).map { "m\($0)" })
        #expect(stored.seqs == Array(1...8))
        #expect(try bob.fullHistory(channel).texts == (0..<8).map { "m\($0)" })
    }
}
