import ChatCore
import EventLoop
import Foundation
import ServiceTestSupport
import Synchronization
import Testing
@testable import Gateway

/// Output and requests stay bounded for every client, and the bounds judge only real
/// slowness: a fast reader, a large history page or a pipelining HTTP client is served;
/// a client that stops reading is cut off before it costs more than its bound.
@Suite("Resource bounds")
struct ResourceBoundsTests {
    /// Unsent output of every connection of the gateway, summed on their loops.
    static func queuedOutput(_ gateway: TestGateway) -> Int {
        gateway.server.group.loops.reduce(0) { total, loop in
            total + loop.queue.sync { loop.liveConnections.reduce(0) { $0 + $1.queuedByteCount } }
        }
    }

    static func liveConnections(_ gateway: TestGateway) -> Int {
        gateway.server.group.loops.reduce(0) { total, loop in total + loop.queue.sync { loop.connectionCount } }
    }

    @Test("a client reading as fast as it can, 48 KB messages with 16 in flight under a 256 KiB bound, is not a slow consumer",
          arguments: [false, true])
    func fastReaderIsKept(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls) { transport, chat in
            transport.outputBound = OutputBound(maxUnsentBytes: 262_144, windowTicks: 3)
            chat.limits.maxTextLength = 60_000
        }
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try alice.createGroup(["bob"])
        let text = String(repeating: "m", count: 48_000)
        let total = 96
        let (aliceRef, bobRef) = (UnsafeTransfer(value: alice), UnsafeTransfer(value: bob))
        let bobHas = ReceivedCount()
        async let received: Int = offThePool {
            var count = 0
            while count < total {
                _ = try bobRef.value.nextEvent("message.new")
                count += 1
                bobHas.value.store(count, ordering: .relaxed)
            }
            return count
        }
        let acknowledged = try await offThePool { () -> Int in
            let alice = aliceRef.value
            var acknowledged = 0
            var sent = 0
            var id = 10_000
            while sent < total {
                // One burst at a time ahead of bob: a reader keeping up, however busy the
                // machine (two bursts unread would pass the hard limit, four times the bound).
                let deadline = Date().addingTimeInterval(30)
                while bobHas.value.load(ordering: .relaxed) < sent, Date() < deadline { usleep(1_000) }
                let batch = min(16, total - sent)
                // Sixteen sends in one write: read in one go, committed together, and their
                // 768 KB of replies and deliveries queued in one pass, three times the bound.
                var frames: [UInt8] = []
                for _ in 0..<batch {
                    id += 1
                    let request = #"{"id":\#(id),"type":"message.send","channelId":"\#(channel)","text":"\#(text)"}"#
                    frames += alice.connection.webSocket.encodeText(Array(request.utf8))
                }
                try alice.connection.write(frames)
                sent += batch
                acknowledged += try alice.replies(count: batch).values.filter { $0["type"] as? String == "ok" }.count
            }
            return acknowledged
        }
        #expect(acknowledged == total)
        #expect(try await received == total)
        #expect(try alice.ok("me")["user"] != nil, "alice is still connected")
    }

    @Test("one history reply larger than the output bound reaches a client that reads it")
    func largeHistoryReplyIsKept() async throws {
        let gateway = try await TestGateway.chat { transport, _ in
            transport.outputBound = OutputBound(maxUnsentBytes: 64 * 1024, windowTicks: 2)
        }
        let alice = try await gateway.connect("alice")
        let channel = try alice.createGroup([])
        let text = String(repeating: "h", count: 4000)
        for _ in 0..<100 { _ = try alice.fire("message.send", ["channelId": channel, "text": text]) }
        _ = try alice.replies(count: 100)
        let page = try alice.ok("message.history", ["channelId": channel, "limit": 100])
        #expect((page["messages"] as? [[String: Any]])?.count == 100)
        #expect(try alice.ok("me")["user"] != nil, "alice is still connected")
    }

    @Test("history pages stop at 512 KiB of messages with a next cursor; paging by next gives every message once, in order")
    func historyPagesAreCappedByBytes() async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.limits.maxTextLength = 10_000 }
        let alice = try await gateway.connect("alice")
        let channel = try alice.createGroup([])
        let text = String(repeating: "b", count: 8000)
        for _ in 0..<100 { _ = try alice.fire("message.send", ["channelId": channel, "text": text]) }
        _ = try alice.replies(count: 100)

        let first = try alice.ok("message.history", ["channelId": channel, "afterSeq": 0, "limit": 100])
        let firstCount = (first["messages"] as? [[String: Any]])?.count ?? 0
        #expect(firstCount > 0 && firstCount < 100, "cut by bytes: \(firstCount)")
        #expect(first["next"] is String)
        #expect(try alice.fullHistory(channel).seqs == Array(1...100))
        // Backwards from the newest, the same: the newest page first, next for older ones.
        var seqs: [Int] = []
        var page = try alice.ok("message.history", ["channelId": channel, "limit": 100])
        while true {
            seqs = (page["messages"] as? [[String: Any]] ?? []).seqs + seqs
            guard let next = page["next"] as? String else { break }
            page = try alice.ok("message.history", ["channelId": channel, "cursor": next, "limit": 100])
        }
        #expect(seqs == Array(1...100))
        #expect(try alice.errorCode("message.history", ["channelId": channel, "cursor": "forged"]) == "ERR_INVALID_CURSOR")
        let other = try alice.createGroup([])
        #expect(try alice.errorCode("message.history", ["channelId": other, "cursor": try #require(first["next"] as? String)])
                == "ERR_INVALID_CURSOR")
    }

    @Test("a reader who hides a prolific blocked sender: one request scans at most 1,000 messages and says where to go on")
    func historyScanIsBounded() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice", query: "&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let channel = try alice.createGroup(["bob", "carol"])
        _ = try alice.blockResults("user.block", ["bob"])
        _ = try gateway.say(carol, channel, "oldest")
        var sent = 0
        while sent < 1500 {
            for _ in 0..<50 { _ = try bob.fire("message.send", ["channelId": channel, "text": "noise"]) }
            _ = try bob.replies(count: 50)
            sent += 50
        }
        _ = try gateway.say(carol, channel, "newest")

        let first = try alice.ok("message.history", ["channelId": channel, "limit": 10])
        #expect((first["messages"] as? [[String: Any]])?.texts == ["newest"])
        #expect(first["next"] is String, "1,501 hidden and visible messages remain unread")
        var texts: [String] = []
        var page = first
        var requests = 1
        while true {
            texts = (page["messages"] as? [[String: Any]] ?? []).texts + texts
            guard let next = page["next"] as? String else { break }
            page = try alice.ok("message.history", ["channelId": channel, "cursor": next, "limit": 10])
            requests += 1
        }
        #expect(texts == ["oldest", "newest"])
        #expect(requests >= 2)
    }

    @Test("an HTTP client pipelining GET /metrics without reading holds at most its bound, others connect meanwhile, and every answer comes once it reads")
    func pipelinedRequestsWaitForTheReader() async throws {
        // A kept-alive connection with no answer in progress for the handshake timeout is closed;
        // on a loaded machine the steps below may take longer than the default 10 s.
        let gateway = try await TestGateway.chat { transport, _ in transport.timeouts.handshake = 60 }
        let port = gateway.port
        let count = 2000
        let flooder = try TestClient(port: port, timeoutSeconds: 10, receiveBufferBytes: 4096)
        try flooder.write(Array(String(repeating: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", count: count).utf8))
        try await Task.sleep(for: .milliseconds(300))
        let queued = Self.queuedOutput(gateway)
        #expect(queued < 512 * 1024, "the gateway holds \(queued) bytes for a client that does not read")
        // Others are served meanwhile.
        let token = try await gateway.token(for: "alice")
        let (served, waited) = try await offThePool {
            // Timed on this thread, apart from the test pool's queue.
            let started = ContinuousClock.now
            let alice = try RawChatClient(port: port, tls: false, path: "/v1/ws?token=\(token)")
            return (try alice.ok("me")["user"] != nil, ContinuousClock.now - started)
        }
        #expect(served)
        // Bounded, not timed: the whole suite runs in parallel on two cores beside other work.
        #expect(waited < .seconds(10))
        // Once it reads, it gets every answer, in order.
        let statuses = try await offThePool { try (0..<count).map { _ in try flooder.readResponse().status } }
        #expect(statuses.count == count && statuses.allSatisfy { $0 == 200 })
    }

    @Test("a client that floods pings and never reads the pongs is closed before its pongs pass four times the bound")
    func pingFloodIsBounded() async throws {
        let gateway = try await TestGateway.chat { transport, _ in
            transport.outputBound = OutputBound(maxUnsentBytes: 64 * 1024, windowTicks: 1)
            transport.timeouts.close = 1
        }
        let token = try await gateway.token(for: "mallory")
        let port = gateway.port
        let flooder = try await offThePool {
            try RawChatClient(port: port, tls: false, path: "/v1/ws?token=\(token)", receiveBufferBytes: 4096)
        }
        let before = Self.liveConnections(gateway)
        let ping = flooder.connection.webSocket.encodePing(Array(repeating: 0x70, count: 125))
        let burst = Array([[UInt8]](repeating: ping, count: 512).joined())
        let written = try await offThePool { () -> Int in
            var written = 0
            // 16 MB of pings, far more than the kernel's buffers take; stops when the gateway closes.
            for _ in 0..<250 {
                do { try flooder.connection.write(burst) } catch { break }
                written += burst.count
            }
            return written
        }
        // Judged slow (4000), then released once its close timeout passes.
        var judged = false
        for _ in 0..<100 where !judged {
            judged = try await gateway.http("GET", "/metrics").body.contains("chat_slow_consumer_closes_total 1")
            if !judged { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(judged, "not judged slow after \(written) bytes of pings")
        var closed = false
        for _ in 0..<50 where !closed {
            closed = Self.liveConnections(gateway) < before
            if !closed { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(closed, "still open after its close timeout")
        #expect(Self.queuedOutput(gateway) < 1024 * 1024)
    }

    @Test("per-connection request budget: past the burst every request type is answered ERR_RATE_LIMITED with retryAfterMs, each exactly once")
    func requestBudget() async throws {
        let gateway = try await TestGateway.chat { _, chat in
            chat.limits.connectionRequestsPerSecond = 10
            chat.limits.connectionRequestBurst = 20
        }
        let alice = try await gateway.connect("alice")
        let types = ["me", "user.list", "channel.list", "user.blocked.list"]
        let ids = try (0..<60).map { try alice.fire(types[$0 % types.count]) }
        let replies = try alice.replies(count: 60)
        #expect(Set(replies.keys) == Set(ids))
        let limited = replies.values.filter { ($0["error"] as? [String: Any])?["code"] as? String == "ERR_RATE_LIMITED" }
        #expect(replies.values.filter { $0["type"] as? String == "ok" }.count == 20)
        #expect(limited.count == 40)
        #expect(limited.allSatisfy { (($0["error"] as? [String: Any])?["retryAfterMs"] as? Int ?? 0) > 0 })
        // The budget refills with time (the gateway's clock is the test's).
        gateway.clock.advance(by: 1000)
        #expect(try alice.ok("me")["user"] != nil)
        let metrics = try await gateway.http("GET", "/metrics")
        #expect(metrics.body.contains("chat_requests_refused_total{reason=\"rate\"} 40"))
    }

    @Test("at most maxRequestsInFlight requests per connection reach the core; the rest are refused at once, not queued")
    func requestsInFlight() async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.limits.maxRequestsInFlight = 4 }
        let alice = try await gateway.connect("alice")
        let channel = try alice.createGroup([])
        // Fifty requests in one write arrive in one read: none is answered before all are admitted or refused.
        var bytes: [UInt8] = []
        for id in 1000..<1050 {
            bytes += alice.connection.webSocket.encodeText(Array(#"{"id":\#(id),"type":"message.history","channelId":"\#(channel)"}"#.utf8))
        }
        try alice.connection.write(bytes)
        let replies = try alice.replies(count: 50)
        #expect(replies.count == 50)
        #expect(replies.values.filter { $0["type"] as? String == "ok" }.count == 4)
        let refused = replies.values.filter { ($0["error"] as? [String: Any])?["code"] as? String == "ERR_RATE_LIMITED" }
        #expect(refused.count == 46)
        // Answered requests free their places.
        #expect(try alice.ok("me")["user"] != nil)
    }

    @Test("an upgrade whose pipelined bytes overflow while its token is checked releases its session (no leaked connection slot)")
    func overflowWhileDecidingReleasesTheSession() async throws {
        // A deciding connection keeps what one read brought within the bound and reads no more,
        // so the overflow must come in one read: with the default 64 KiB bound the bytes spanned
        // two loopback segments (MSS 65,483), and a read of the first alone stayed under it.
        let gateway = try await TestGateway.chat { transport, chat in
            chat.limits.maxConnectionsPerUser = 1
            transport.maxMessageBytes = 1024
        }
        let chat = try #require(gateway.server.router.chat)
        let token = try await gateway.token(for: "alice")
        let port = gateway.port
        // Hold the core so the decision comes after the overflowing bytes, until the client
        // saw its close.
        let hold = CoreHold(chat)
        // The client's steps run on their own thread: a test waiting for the cooperative pool
        // (busy with other tests) would otherwise see the hold end before its bytes went out.
        let closed = try await offThePool {
            let client = try TestClient(port: port, timeoutSeconds: 20)
            try client.write("GET /v1/ws?token=\(token) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            usleep(100_000)
            try? client.write([UInt8](repeating: 0x81, count: 8_000))
            return try client.waitForEOF()
        }
        #expect(closed)
        hold.end()
        var live = 1
        for _ in 0..<200 where live > 0 {
            try await Task.sleep(for: .milliseconds(50))
            live = chat.queue.sync { chat.engine.sessions(of: "alice").count }
        }
        #expect(live == 0, "the abandoned upgrade still holds alice's only connection slot")
        let alice = try await gateway.connect("alice")
        #expect(try alice.ok("me")["user"] != nil)
    }
}

/// How many messages a reading thread has had so far, read by the sending one.
private final class ReceivedCount: Sendable {
    let value = Atomic<Int>(0)
}
