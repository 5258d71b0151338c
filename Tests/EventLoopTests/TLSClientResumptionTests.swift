import Dispatch
import Foundation
import ServiceTestSupport
import Testing
@testable import EventLoop

/// The client role resumes: a connection offered the session of an earlier one skips the
/// full handshake while the server still accepts its ticket, even though every client here
/// drops its socket without a close_notify.
@Suite("TLS client resumption")
struct TLSClientResumptionTests {
    /// Server side: echoes what it reads.
    final class Echo: ConnectionHandler, @unchecked Sendable {
        func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
            connection.write(Array(bytes))
        }
        func connectionDidClose(_ connection: SocketConnection) {}
    }

    /// Client side: sends "ping"; once the echo is back (the ticket came before it) notes
    /// whether the session resumed, takes the session to offer next time and drops the socket.
    final class Probe: ConnectionHandler, @unchecked Sendable {
        let closed = DispatchSemaphore(value: 0)
        var echoed = 0
        var resumed = false
        var session: TLSResumableSession?

        func connectionDidConnect(_ connection: SocketConnection) { connection.write(Array("ping".utf8)) }

        func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
            echoed += bytes.count
            guard echoed >= 4 else { return }
            resumed = connection.isTLSResumed
            session = connection.resumableTLSSession
            connection.closeNow()
        }

        func connectionDidClose(_ connection: SocketConnection) { closed.signal() }
    }

    /// A self-signed ECDSA pair from scripts/gen-dev-cert in a fresh folder.
    private func developmentCertificate() throws -> (certificate: String, key: String) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("eventloop-tls-\(UUID().uuidString)").path
        let status = try ChildProcess.run(root.appendingPathComponent("scripts/gen-dev-cert").path, [dir]).status
        try #require(status == 0, "gen-dev-cert failed")
        return (dir + "/dev-cert.pem", dir + "/dev-key.pem")
    }

    /// One connection offering `session`, run until the client dropped it.
    private func exchange(port: Int, client: TLSContext, loop: EventLoop, session: TLSResumableSession?) throws -> Probe {
        let probe = Probe()
        _ = try SocketConnection.connect(host: "127.0.0.1", port: port, loop: loop, tls: client, session: session,
                                         handler: probe)
        try #require(probe.closed.wait(timeout: .now() + 5) == .success, "the exchange did not finish")
        try #require(probe.echoed >= 4, "no echo: the TLS connection failed")
        return probe
    }

    @Test("the second connect resumes, also under the previous key; after two rotations it is a full handshake")
    func resumesUntilTwoRotations() throws {
        let pair = try developmentCertificate()
        let server = try TLSContext.server(certificateFile: pair.certificate, privateKeyFile: pair.key,
                                           ticketLifetimeSeconds: 3600)
        let group = EventLoopGroup(count: 1)
        let listener = try Listener(host: "127.0.0.1", port: 0, group: group) { fd, loop in
            _ = SocketConnection.accepted(fd: fd, loop: loop, tls: server, handler: Echo())
        }
        listener.start()
        defer { listener.stop() }
        let client = try TLSContext.insecureClient()
        let loop = EventLoop(index: 0)

        let first = try exchange(port: listener.port, client: client, loop: loop, session: nil)
        #expect(!first.resumed)
        let session = try #require(first.session, "no resumable session after the first connection")

        #expect(try exchange(port: listener.port, client: client, loop: loop, session: session).resumed)
        #expect(server.rotateTicketKeys())
        #expect(try exchange(port: listener.port, client: client, loop: loop, session: session).resumed,
                "a ticket of the previous key still resumes")
        #expect(server.rotateTicketKeys())
        let full = try exchange(port: listener.port, client: client, loop: loop, session: session)
        #expect(!full.resumed, "a ticket two keys old falls back to a full handshake")
        let fresh = try #require(full.session, "the full handshake gives a new ticket")
        #expect(try exchange(port: listener.port, client: client, loop: loop, session: fresh).resumed)
    }

    @Test("a server without tickets gives no resumable session")
    func noTickets() throws {
        let pair = try developmentCertificate()
        let server = try TLSContext.server(certificateFile: pair.certificate, privateKeyFile: pair.key)
        let group = EventLoopGroup(count: 1)
        let listener = try Listener(host: "127.0.0.1", port: 0, group: group) { fd, loop in
            _ = SocketConnection.accepted(fd: fd, loop: loop, tls: server, handler: Echo())
        }
        listener.start()
        defer { listener.stop() }
        let probe = try exchange(port: listener.port, client: try TLSContext.insecureClient(), loop: EventLoop(index: 0),
                                 session: nil)
        #expect(!probe.resumed)
        #expect(probe.session == nil)
    }
}
