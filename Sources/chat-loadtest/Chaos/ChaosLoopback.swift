#if canImport(Glibc)
import Glibc
#endif

/// The gateway child's loopback port: picking a free one, and asking it `GET /healthz`
/// (PROTOCOL.md §10) with a plain blocking socket. Blocking is fine here: the probe
/// runs on the run's own thread between kills, never on the event loop, and each
/// call is bounded by a one-second send/receive timeout.
enum ChaosLoopback {
    /// Whether the gateway answers `/healthz` with 200 right now.
    static func isHealthy(port: Int) -> Bool {
        guard let fd = connected(port: port) else { return false }
        defer { close(fd) }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return false
        }
        // The status line is all that is needed: "HTTP/1.1 200 …".
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while answer.count < 12 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            answer.append(contentsOf: buffer[..<n])
        }
        return answer.count >= 12 && String(decoding: answer[9..<12], as: UTF8.self) == "200"
    }

    /// Whether something accepts a TCP connection on the loopback port right now.
    static func accepts(port: Int) -> Bool {
        guard let fd = connected(port: port) else { return false }
        close(fd)
        return true
    }

    /// A blocking socket connected to the loopback port (one-second send/receive
    /// timeouts), or nil when nothing accepts.
    private static func connected(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// A loopback port that was free a moment ago: bind port 0, read what the kernel chose, close.
    static func freePort() throws(LoadTestError) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LoadTestError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw LoadTestError("bind 127.0.0.1:0: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw LoadTestError("getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}
