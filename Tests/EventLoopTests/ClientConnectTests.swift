import Dispatch
import Testing
@testable import EventLoop
#if canImport(Glibc)
import Glibc
#endif

@Suite("Client connect")
struct ClientConnectTests {
    /// Records how a client connection ended.
    final class Outcome: ConnectionHandler, @unchecked Sendable {
        let closed = DispatchSemaphore(value: 0)
        var connected = false
        func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {}
        func connectionDidConnect(_ connection: SocketConnection) { connected = true }
        func connectionTick(_ connection: SocketConnection, tick: UInt64) {}
        func connectionDidClose(_ connection: SocketConnection) { closed.signal() }
    }

    /// A loopback port with nothing listening: bind one, read it, close it.
    private func closedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test("connecting to a closed port ends in connectionDidClose, never a hang", arguments: 0..<20)
    func refusedConnect(attempt: Int) throws {
        let loop = EventLoop(index: 0)
        let outcome = Outcome()
        _ = try SocketConnection.connect(host: "127.0.0.1", port: closedPort(), loop: loop, tls: nil, handler: outcome)
        #expect(outcome.closed.wait(timeout: .now() + 3) == .success)
        #expect(!outcome.connected)
        loop.queue.sync {}
        #expect(loop.queue.sync { loop.connectionCount } == 0)
    }
}
