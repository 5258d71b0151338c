import Foundation
import ServiceTestSupport
import EventLoop
import Testing
@testable import Gateway

/// PROTOCOL.md §6 over real sockets: the per-user message rate across devices,
/// the open-channel live throttle, the connection cap and slow consumers.
/// The gateway's clock is manual: nothing here sleeps.
@Suite("Throttling and limits")
struct ThrottleTests {
    /// The protocol's defaults: 5 messages a second (burst 5) per user, 5 live a second per open channel.
    private func gateway(tls: Bool = false) async throws -> TestGateway {
        try await TestGateway.chat(tls: tls) { _, chat in
            chat.limits.userMessagesPerSecond = 5
            chat.limits.userMessageBurst = 5
            chat.limits.openChannelMessagesPerSecond = 5
        }
    }

    @Test("one user on three connections fires 30 sends at once: 5 ok, 25 ERR_RATE_LIMITED, none stored or delivered",
          arguments: [false, true])
    func burstAcrossDevices(tls: Bool) async throws {
        let gateway = try await gateway(tls: tls)
        let devices = [try await gateway.connect("alice", query: "&device=a"),
                       try await gateway.connect("alice", query: "&device=b"),
                       try await gateway.connect("alice", query: "&device=c")]
        let bob = try await gateway.connect("bob")
        let channel = try #require(try devices[0].ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)

        var fired: [[Int]] = [[], [], []]
        for round in 0..<10 {
            for (index, device) in devices.enumerated() {
                fired[index].append(try device.fire("message.send", ["channelId": channel, "text": "m\(index)-\(round)"]))
            }
        }
        var ok: [[String: Any]] = []
        var limited: [[String: Any]] = []
        for (index, device) in devices.enumerated() {
            let replies = try device.replies(count: fired[index].count)
            for id in fired[index] {
                let reply = try #require(replies[id])
                if reply["type"] as? String == "ok" {
                    ok.append(try #require(reply["result"] as? [String: Any]))
                } else {
                    limited.append(try #require(reply["error"] as? [String: Any]))
                }
            }
        }
        #expect(ok.count == 5)
        #expect(limited.count == 25)
        #expect(limited.allSatisfy { $0["code"] as? String == "ERR_RATE_LIMITED" })
        // Nothing refilled on the manual clock: the next token is one interval (200 ms) away.
        let retries = limited.compactMap { $0["retryAfterMs"] as? Int }
        #expect(retries.count == 25 && retries.allSatisfy { $0 == 200 }, "\(retries)")
        #expect(ok.seqs.sorted() == [1, 2, 3, 4, 5], "no seq is consumed by a rejected send")

        let history = try bob.fullHistory(channel)
        #expect(history.count == 5)
        #expect(Set(history.ids) == Set(ok.ids))
        let live = try bob.takeEvents("message.new")
        #expect(live.count == 5)
        #expect(Set(live.compactMap { ($0["data"] as? [String: Any])?["id"] as? String }) == Set(ok.ids))

        // Still limited a moment before retryAfterMs, admitted once it has passed.
        gateway.clock.advance(by: 199)
        #expect(try devices[1].errorCode("message.send", ["channelId": channel, "text": "early"]) == "ERR_RATE_LIMITED")
        gateway.clock.advance(by: 1)
        let late = try devices[1].send(channel, "after retryAfterMs")
        #expect(late["seq"] as? Int == 6)
        #expect(try bob.nextEvent("message.new")["data"].map { ($0 as? [String: Any])?["seq"] as? Int } == 6)
    }

    @Test("the bucket refills at the rate: a token every 200 ms, never more than the burst")
    func refill() async throws {
        let gateway = try await gateway()
        let alice = try await gateway.connect("alice")
        _ = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        for index in 0..<5 { try alice.send(channel, "burst \(index)") }
        let limited = try alice.request("message.send", ["channelId": channel, "text": "over"])
        #expect((limited["error"] as? [String: Any])?["retryAfterMs"] as? Int == 200)
        gateway.clock.advance(by: 50)
        let later = try alice.request("message.send", ["channelId": channel, "text": "over"])
        #expect((later["error"] as? [String: Any])?["retryAfterMs"] as? Int == 150, "fractional refill counts")
        gateway.clock.advance(by: 550)  // 600 ms since the burst: three tokens
        for index in 0..<3 { try alice.send(channel, "refilled \(index)") }
        #expect(try alice.errorCode("message.send", ["channelId": channel, "text": "fourth"]) == "ERR_RATE_LIMITED")
        gateway.clock.advance(by: 60_000)  // a long pause fills the bucket to the burst, not beyond
        for index in 0..<5 { try alice.send(channel, "again \(index)") }
        #expect(try alice.errorCode("message.send", ["channelId": channel, "text": "sixth"]) == "ERR_RATE_LIMITED")
    }

    @Test("users are limited separately; invalid sends and retries of a stored clientMessageId spend no token")
    func separateUsersAndFreeRetries() async throws {
        let gateway = try await gateway()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        #expect(try alice.errorCode("message.send", ["channelId": channel, "text": String(repeating: "x", count: 5001)])
                == "ERR_MESSAGE_TOO_LONG")
        #expect(try alice.errorCode("message.send", ["channelId": "c_nope", "text": "x"]) == "ERR_CHANNEL_NOT_FOUND")
        let first = try alice.send(channel, "one", ["clientMessageId": "k1"])
        for _ in 0..<3 {
            #expect(try alice.send(channel, "one", ["clientMessageId": "k1"])["id"] as? String == first["id"] as? String)
        }
        for index in 0..<4 { try alice.send(channel, "more \(index)") }
        #expect(try alice.errorCode("message.send", ["channelId": channel, "text": "sixth"]) == "ERR_RATE_LIMITED")
        for index in 0..<5 { try bob.send(channel, "bob \(index)") }
        #expect(try bob.errorCode("message.send", ["channelId": channel, "text": "sixth"]) == "ERR_RATE_LIMITED")
    }

    @Test("open channel: 20 members each send one within 100 ms; a listener gets 5 live, history holds all 20")
    func openChannelThrottle() async throws {
        let gateway = try await gateway()
        let listener = try await gateway.connect("listener")
        let channel = try #require(try listener.ok("channel.create", ["channelType": "open", "name": "lobby"])["id"] as? String)
        var senders: [RawChatClient] = []
        for index in 0..<20 {
            let sender = try await gateway.connect("s\(index)")
            _ = try sender.ok("channel.join", ["channelId": channel])
            senders.append(sender)
        }
        let start = gateway.clock.now()
        for (index, sender) in senders.enumerated() {
            try sender.send(channel, "hello from \(index)")
            gateway.clock.advance(by: 5)
        }
        #expect(gateway.clock.now() - start == 100)
        let live = try listener.takeEvents("message.new")
        #expect(live.count == 5, "\(live.count) live")
        let history = try listener.fullHistory(channel)
        #expect(history.count == 20)
        #expect(history.seqs == Array(1...20))

        // A second later the channel delivers live again.
        gateway.clock.advance(by: 1000)
        try senders[0].send(channel, "a second later")
        let next = try listener.nextEvent("message.new")
        #expect((next["data"] as? [String: Any])?["text"] as? String == "a second later")
    }

    @Test("the 31st live connection of a user gets 429; closing one makes room")
    func connectionCap() async throws {
        let gateway = try await TestGateway.chat()
        var connections: [RawChatClient] = []
        for index in 0..<30 { connections.append(try await gateway.connect("alice", query: "&device=d\(index)")) }
        let token = try await gateway.token(for: "alice")
        let refused = try await gateway.upgrade(path: "/v1/ws?token=\(token)")
        #expect(refused.response.status == 429)
        let body = parseJSONObject(refused.response.body)
        #expect((body["error"] as? [String: Any])?["code"] is String)
        // Another user is not affected.
        _ = try await gateway.connect("bob")

        connections.removeLast().connection.dropConnection()
        var admitted = false
        for _ in 0..<100 where !admitted {
            let attempt = try await gateway.upgrade(path: "/v1/ws?token=\(token)")
            admitted = attempt.response.status == 101
            if !admitted { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(admitted)
    }

    @Test("a member that does not read while 10 MB stream through its channel is closed with 4000; the others get everything")
    func slowConsumer() async throws {
        let gateway = try await TestGateway.chat { transport, _ in
            transport.timeouts.close = 30
            transport.outputBound = OutputBound(maxUnsentBytes: 4 * 1024 * 1024, windowTicks: 2)
        }
        let sender = try await gateway.connect("sender")
        let fast = try await gateway.connect("fast")
        let slow = try await gateway.connect("slow", receiveBufferBytes: 16 * 1024)
        let channel = try #require(try sender.ok("channel.create", ["channelType": "group", "userIds": ["fast", "slow"]])["id"] as? String)

        let text = String(repeating: "s", count: 4000)
        let count = 2600  // 2,600 × ~4.2 KB framed ≈ 10.9 MB through the channel
        let (senderRef, fastRef) = (UnsafeTransfer(value: sender), UnsafeTransfer(value: fast))
        async let sending: Void = offThePool {
            let sender = senderRef.value
            var outstanding = 0
            for index in 0..<count {
                _ = try sender.fire("message.send", ["channelId": channel, "text": text, "data": ["n": index]])
                outstanding += 1
                if outstanding == 64 {
                    _ = try sender.replies(count: outstanding)
                    outstanding = 0
                }
            }
            _ = try sender.replies(count: outstanding)
        }
        async let fastReceived: Int = offThePool {
            let fast = fastRef.value
            var received = 0
            while received < count {
                _ = try fast.nextEvent("message.new")
                received += 1
            }
            return received
        }
        try await sending
        #expect(try await fastReceived == count)
        // The slow member still does not read: once its backlog has stayed over the bound for
        // the window, the gateway gives up on it.
        var judged = false
        for _ in 0..<100 where !judged {
            judged = try await gateway.http("GET", "/metrics").body.contains("chat_slow_consumer_closes_total 1")
            if !judged { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(judged)
        // Now the slow member reads what reached it: some messages, then close 4000.
        let (messages, code) = try await offThePool { () -> (Int, UInt16?) in
            var messages = 0
            while true {
                switch try slow.connection.nextEvent() {
                case .text: messages += 1
                case .closed(let code, _): return (messages, code?.rawValue)
                case .failed(let error): throw TestClientError("protocol error \(error)")
                default: continue
                }
            }
        }
        #expect(code == 4000)
        // What was queued before the verdict still goes out ahead of the close frame; nothing after it.
        #expect(messages <= count + 1, "\(messages) frames before the close")
        // The fast member is still served.
        try sender.send(channel, "still here")
        #expect((try fast.nextEvent("message.new")["data"] as? [String: Any])?["text"] as? String == "still here")
    }
}
