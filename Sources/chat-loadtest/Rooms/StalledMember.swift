#if canImport(Glibc)
import Glibc
#endif
import WebSocket

/// A channel member that upgrades and then never reads (PROTOCOL.md §6 slow
/// consumer): a blocking socket with a small, fixed receive buffer, so the
/// gateway's queue for it fills. After the run it reads what reached it and
/// reports how the gateway ended the connection. Plain TCP only.
final class StalledMember {
    enum Ending: Hashable, CustomStringConvertible {
        case closed(UInt16?)
        case endOfStream
        case stillOpen
        case failed(String)

        var description: String {
            switch self {
            case .closed(let code?): "close \(code)"
            case .closed(nil): "close without code"
            case .endOfStream: "end of stream without close"
            case .stillOpen: "still open"
            case .failed(let reason): reason
            }
        }
    }

    private let fd: Int32

    init(address: GatewayAddress, token: String, receiveBufferBytes: Int32 = 16 * 1024) throws(LoadTestError) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoadTestError("stalled member: socket() failed, errno \(errno)") }
        var buffer = receiveBufferBytes
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = UInt16(address.port).bigEndian
        guard inet_pton(AF_INET, address.host == "localhost" ? "127.0.0.1" : address.host, &socketAddress.sin_addr) == 1 else {
            close(fd)
            throw LoadTestError("stalled member: \(address.host) is not an IPv4 address")
        }
        let connected = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw LoadTestError("stalled member: connect failed, errno \(errno)")
        }
        var handshake = address.upgrade(token: token)
        let request = handshake.request
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
            close(fd)
            throw LoadTestError("stalled member: could not send the upgrade")
        }
        // Read the answer a byte at a time, so no frame byte is taken off the socket.
        var byte: UInt8 = 0
        while true {
            guard recv(fd, &byte, 1, 0) == 1 else {
                close(fd)
                throw LoadTestError("stalled member: no upgrade response")
            }
            switch handshake.receive([byte]) {
            case .needMoreBytes:
                continue
            case .accepted:
                return
            case .refused(let refusal):
                close(fd)
                throw LoadTestError("stalled member: upgrade refused: \(refusal)")
            }
        }
    }

    deinit { close(fd) }

    /// Reads everything the gateway queued until its close frame, the end of the stream or 5 s of silence.
    func drain() -> (ending: Ending, bytes: Int) {
        var connection = WebSocketConnection(role: .client, maxMessageBytes: 1 << 24)
        var events: [WebSocketConnection.Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return (.endOfStream, total) }
            if count < 0 {
                return (errno == EAGAIN || errno == EWOULDBLOCK ? .stillOpen : .failed("recv errno \(errno)"), total)
            }
            total += count
            events.removeAll(keepingCapacity: true)
            buffer.withUnsafeBytes { connection.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count]), events: &events) }
            for event in events {
                switch event {
                case .closed(let code, _): return (.closed(code?.rawValue), total)
                case .failed(let error): return (.failed("protocol error \(error)"), total)
                default: continue
                }
            }
        }
    }
}
