import Testing
@testable import WebSocket

/// `WebSocketKeepalive`: a ping after `idle` of silence, the connection declared dead when
/// nothing arrives within `pongTimeout` of it, and any bytes counting as an answer.
@Suite struct KeepaliveTests {
    @Test func quietForIdlePingsOnce() {
        var keepalive = WebSocketKeepalive(idle: 60, pongTimeout: 30)
        #expect(keepalive.check(now: 59, lastReceivedAt: 0) == nil)
        #expect(keepalive.check(now: 60, lastReceivedAt: 0) == .sendPing)
        #expect(keepalive.check(now: 61, lastReceivedAt: 0) == nil, "one ping per silence")
    }

    @Test func noAnswerWithinThePongTimeoutCloses() {
        var keepalive = WebSocketKeepalive(idle: 60, pongTimeout: 30)
        #expect(keepalive.check(now: 60, lastReceivedAt: 0) == .sendPing)
        #expect(keepalive.check(now: 89, lastReceivedAt: 0) == nil)
        #expect(keepalive.check(now: 90, lastReceivedAt: 0) == .close(code: .goingAway, reason: "ping timeout"))
    }

    @Test func anyBytesAnswerThePing() {
        var keepalive = WebSocketKeepalive(idle: 60, pongTimeout: 30)
        #expect(keepalive.check(now: 60, lastReceivedAt: 0) == .sendPing)
        keepalive.received()
        #expect(keepalive.check(now: 95, lastReceivedAt: 70) == nil, "answered: idle counts from the last bytes")
        #expect(keepalive.check(now: 130, lastReceivedAt: 70) == .sendPing)
    }

    @Test func trafficKeepsItQuiet() {
        var keepalive = WebSocketKeepalive(idle: 2, pongTimeout: 1)
        for now in UInt64(0)..<100 {
            keepalive.received()
            #expect(keepalive.check(now: now, lastReceivedAt: now) == nil)
        }
    }
}
