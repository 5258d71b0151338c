import COpenSSL
import ServiceTestSupport
import Testing
@testable import Gateway

/// Session tickets: a returning client resumes its TLS session instead of a full handshake;
/// tickets of the current and the previous key resume, older ones fall back to a full one.
@Suite("TLS session resumption")
struct TLSResumptionTests {
    /// One `GET /healthz` over a fresh TLS connection offering `session`; the client after it.
    private func healthz(_ gateway: TestGateway, version: Int32?, session: OpaquePointer? = nil) async throws -> TestClient {
        let port = gateway.port
        let sessionBox = UnsafeTransfer(value: session)
        return try await offThePool {
            let client = try TestClient(port: port, tls: true, tlsVersion: version, session: sessionBox.value)
            try client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            guard response.status == 200 else { throw TestClientError("healthz: \(response.status)") }
            // A client that vanishes without close_notify has its session marked not resumable.
            client.shutdownTLS()
            return client
        }
    }

    @Test("a ticket resumes the session, under the current key and the previous one; two rotations later it does not",
          arguments: [nil, TLS1_2_VERSION] as [Int32?])
    func resumeAcrossRotations(version: Int32?) async throws {
        let gateway = try await TestGateway.chat(tls: true)
        let first = try await healthz(gateway, version: version)
        #expect(!first.sessionReused)
        let session = try #require(first.copySession())
        defer { SSL_SESSION_free(session) }

        #expect(try await healthz(gateway, version: version, session: session).sessionReused)
        #expect(gateway.server.rotateTicketKeys())
        #expect(try await healthz(gateway, version: version, session: session).sessionReused, "the previous key still resumes")
        #expect(gateway.server.rotateTicketKeys())
        let full = try await healthz(gateway, version: version, session: session)
        #expect(!full.sessionReused, "a ticket two keys old falls back to a full handshake")
    }

    @Test("a resumed session carries a chat WebSocket like a full one")
    func chatOverResumedSession() async throws {
        let gateway = try await TestGateway.chat(tls: true)
        let first = try await healthz(gateway, version: nil)
        let session = try #require(first.copySession())
        defer { SSL_SESSION_free(session) }
        let token = try await gateway.token(for: "alice")
        let (port, sessionBox) = (gateway.port, UnsafeTransfer(value: session))
        let reused = try await offThePool { () -> Bool in
            let client = try TestClient(port: port, tls: true, session: sessionBox.value)
            let response = try client.upgrade(path: "/v1/ws?token=\(token)")
            guard response.status == 101 else { throw TestClientError("upgrade: \(response.status)") }
            try client.sendText(#"{"id":1,"type":"me"}"#)
            guard try client.nextText().contains("\"alice\"") else { throw TestClientError("no me reply") }
            return client.sessionReused
        }
        #expect(reused)
    }

    @Test("tls.ticketKeyRotationSeconds 0: no tickets, every handshake is a full one")
    func ticketsOff() async throws {
        let gateway = try await TestGateway.chat(tls: true) { transport, _ in transport.ticketKeyRotationSeconds = 0 }
        let first = try await healthz(gateway, version: nil)
        let session = try #require(first.copySession())
        defer { SSL_SESSION_free(session) }
        #expect(!(try await healthz(gateway, version: nil, session: session).sessionReused))
        #expect(!gateway.server.rotateTicketKeys())
    }
}
