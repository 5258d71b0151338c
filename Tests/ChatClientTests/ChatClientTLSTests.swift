import EventLoop
import Testing
@testable import ChatClient

/// `wss://` through `WebSocketTransport`: the server's certificate is checked, by default
/// against the system's trust store, and its name against the host.
@Suite("ChatClient over TLS", .serialized)
struct ChatClientTLSTests {
    @Test func aTrustedCertificateForTheHostConnectsAndAnUntrustedOneDoesNot() async throws {
        let certificate = try LiveGateway.developmentCertificate()
        let gateway = try await LiveGateway.start(certificate: certificate)
        let trusting = WebSocketTransport(tls: try TLSContext.verifyingClient(caFile: certificate.certificate))
        for host in ["localhost", "127.0.0.1"] {
            let client = ChatClient(url: "wss://\(host):\(gateway.port)/v1/ws", transport: trusting) {
                try await gateway.token(for: "alice")
            }
            try await client.connect()
            #expect(try await client.me().user.id == "alice", "\(host)")
            await client.disconnect()
        }
        // The default context trusts the system's authorities only: a self-signed server is refused.
        let strict = ChatClient(url: "wss://localhost:\(gateway.port)/v1/ws") { try await gateway.token(for: "alice") }
        await #expect(throws: ChatClientError.self) { try await strict.connect() }
    }
}
