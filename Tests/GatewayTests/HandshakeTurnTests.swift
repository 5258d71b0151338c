import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// `limits.handshakesAtOnce`: an event loop works on a bounded number of opening handshakes;
/// a connection takes a turn once its request head is complete, and waits for one
/// unprocessed, bounded by the handshake timeout. (Connections that never complete a head
/// hold no turn at all: StalledHandshakeTests.)
@Suite("Handshake turns", .timeLimit(.minutes(1)))
struct HandshakeTurnTests {
    static let request = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    /// A complete head whose body is still to come: it takes a turn and stalls holding it.
    static let headAwaitingBody = "POST /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n"

    static func gateway(handshake: UInt64, turn: UInt64) async throws -> TestGateway {
        try await TestGateway.chat { transport, _ in
            transport.eventLoops = 1
            transport.handshakesAtOnce = 1
            transport.timeouts.handshake = handshake
            transport.timeouts.handshakeTurn = turn
        }
    }

    /// Reads one response, retrying the client's short read timeout until `deadline` passes.
    static func response(_ client: TestClient, within seconds: Double) throws -> TestClient.Response {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            do { return try client.readResponse() } catch where Date() < deadline { continue }
        }
    }

    @Test("past the limit a request waits, unanswered, until a handshake in progress ends, then is answered")
    func waitsForATurn() async throws {
        let gateway = try await Self.gateway(handshake: 60, turn: 60)
        let port = gateway.port
        try await offThePool {
            let holder = try TestClient(port: port, timeoutSeconds: 10)
            try holder.write(Self.headAwaitingBody)
            Thread.sleep(forTimeInterval: 0.2)  // ready first: it holds the one turn
            let waiter = try TestClient(port: port, timeoutSeconds: 1)
            try waiter.write(Self.request)
            #expect(throws: TestClientError.self, "answered while another handshake held the turn") {
                try waiter.readSome()
            }
            try holder.write("{}")
            #expect(try holder.readResponse().status > 0)
            #expect(try Self.response(waiter, within: 10).status == 200)
        }
    }

    @Test("a connection that stalls in its handshake gives its turn up and keeps its own timeout")
    func stalledHandshakeGivesTheTurnUp() async throws {
        let gateway = try await Self.gateway(handshake: 60, turn: 2)
        let port = gateway.port
        try await offThePool {
            let staller = try TestClient(port: port, timeoutSeconds: 10)
            try staller.write(Self.headAwaitingBody)
            Thread.sleep(forTimeInterval: 0.2)
            let started = Date()
            let other = try TestClient(port: port, timeoutSeconds: 10)
            try other.write(Self.request)
            #expect(try other.readResponse().status == 200)
            #expect(Date().timeIntervalSince(started) < 6, "waited for the staller's whole handshake timeout")
            try staller.write("{}")
            #expect(try staller.readResponse().status > 0, "the staller lost its connection with its turn")
        }
    }

    @Test("waiting for a turn is bounded by the handshake timeout, counted apart from the handshake's own")
    func waitingIsBounded() async throws {
        // a holds the turn for 2 s, then b holds it; c, ready and waiting since the start, is
        // closed 3 s in, not 3 s after its turn would have come (about 7 s in).
        let gateway = try await Self.gateway(handshake: 3, turn: 2)
        let port = gateway.port
        try await offThePool {
            let a = try TestClient(port: port, timeoutSeconds: 10)
            try a.write(Self.headAwaitingBody)
            Thread.sleep(forTimeInterval: 0.1)
            let b = try TestClient(port: port, timeoutSeconds: 10)
            try b.write(Self.headAwaitingBody)
            Thread.sleep(forTimeInterval: 0.1)
            let started = Date()
            let c = try TestClient(port: port, timeoutSeconds: 10)
            try c.write(Self.request)
            #expect(try c.waitForEOF())
            let waited = Date().timeIntervalSince(started)
            #expect(waited > 1.5 && waited < 5.5, "closed after \(waited) s")
            _ = (a, b)
        }
    }
}
