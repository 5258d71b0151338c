import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// Slowloris against the handshake turns (`limits.handshakesAtOnce`): connections that send
/// nothing, part of a request line or part of a ClientHello hold no turn, so a new client
/// with a complete request or ClientHello upgrades at once while they are held.
@Suite("Stalled handshakes", .timeLimit(.minutes(2)))
struct StalledHandshakeTests {
    /// The first bytes of a ClientHello: a handshake record header announcing 512 bytes, then 60 of them.
    static let truncatedClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]
        + [UInt8](repeating: 0x2A, count: 54)

    /// One event loop with the configuration's default number of turns (64) and timeouts, so
    /// the stalled connections are more than the turns and all compete with the new client.
    static func gateway(tls: Bool) async throws -> TestGateway {
        try await TestGateway.chat(tls: tls) { transport, _ in
            transport.eventLoops = 1
            transport.handshakesAtOnce = 64
            transport.timeouts.handshake = 10
            transport.timeouts.handshakeTurn = 2
        }
    }

    /// `count` connections, half silent and half having sent `partial`, held open by the caller.
    static func stall(_ count: Int, port: Int, partial: [UInt8]) throws -> [TestClient] {
        var held: [TestClient] = []
        for index in 0..<count {
            let client = try TestClient(port: port, timeoutSeconds: 2)
            if index % 2 == 1 { try client.write(partial) }
            held.append(client)
        }
        Thread.sleep(forTimeInterval: 0.3)  // all accepted and read before the new client comes
        return held
    }

    /// Seconds from connecting (and the TLS handshake) to the 101.
    static func timedUpgrade(port: Int, tls: Bool, token: String) throws -> (status: Int, seconds: Double) {
        let started = Date()
        let client = try TestClient(port: port, tls: tls, timeoutSeconds: 2)
        let status = try client.upgrade(path: "/v1/ws?token=\(token)").status
        return (status, Date().timeIntervalSince(started))
    }

    @Test("200 stalled plain connections (silent, partial request line) held: a new client upgrades within 200 ms")
    func stalledPlain() async throws {
        let gateway = try await Self.gateway(tls: false)
        let token = try await gateway.token(for: "alice")
        let port = gateway.port
        try await offThePool {
            let held = try Self.stall(200, port: port, partial: Array("GET /v1/ws?token=eyJhbGciOi".utf8))
            for _ in 0..<3 {
                let upgrade = try Self.timedUpgrade(port: port, tls: false, token: token)
                #expect(upgrade.status == 101)
                #expect(upgrade.seconds < 0.2, "upgrade took \(upgrade.seconds) s behind stalled connections")
            }
            _ = held
        }
    }

    @Test("200 stalled TLS connections (silent, truncated ClientHello) held: a new TLS client upgrades within 200 ms")
    func stalledTLS() async throws {
        let gateway = try await Self.gateway(tls: true)
        let token = try await gateway.token(for: "alice")
        let port = gateway.port
        try await offThePool {
            let held = try Self.stall(200, port: port, partial: Self.truncatedClientHello)
            for _ in 0..<3 {
                let upgrade = try Self.timedUpgrade(port: port, tls: true, token: token)
                #expect(upgrade.status == 101)
                #expect(upgrade.seconds < 0.2, "TLS upgrade took \(upgrade.seconds) s behind stalled connections")
            }
            _ = held
        }
    }

    @Test("a stalled connection that completes its request later is answered; one that never does is closed at the handshake timeout")
    func stalledLaterOrNever() async throws {
        let gateway = try await TestGateway.chat { transport, _ in
            transport.eventLoops = 1
            transport.handshakesAtOnce = 1
            transport.timeouts.handshake = 2
            transport.timeouts.handshakeTurn = 1
        }
        let port = gateway.port
        try await offThePool {
            let late = try TestClient(port: port, timeoutSeconds: 5)
            try late.write("GET /healthz HTTP/1.1\r\n")
            let never = try TestClient(port: port, timeoutSeconds: 5)
            try never.write("GET /healthz HT")
            Thread.sleep(forTimeInterval: 0.2)
            try late.write("Host: x\r\nConnection: close\r\n\r\n")
            #expect(try late.readResponse().status == 200)
            let started = Date()
            #expect(try never.waitForEOF())
            #expect(Date().timeIntervalSince(started) < 4)
        }
    }
}
