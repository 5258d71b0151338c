import Foundation

/// Loopback TCP ports for tests: a free one to hand to a server process that cannot bind
/// port 0 itself, and a socket connected to one.
public enum LoopbackPort {
    /// A port that was free a moment ago: the kernel's choice, or one of
    /// `CHAT_TEST_PORT_RANGE` (`52500-52999`) when set, for machines where each user keeps
    /// to a range. Another listener may take it before the server does: servers that can
    /// bind port 0 and say which port they got should.
    public static func free() -> Int {
        if let range = ProcessInfo.processInfo.environment["CHAT_TEST_PORT_RANGE"]?.split(separator: "-"),
           range.count == 2, let low = Int(range[0]), let high = Int(range[1]), low <= high {
            for _ in 0..<64 {
                let port = Int.random(in: low...high)
                if bound(port) != nil { return port }
            }
        }
        return bound(0) ?? 0
    }

    /// Whether `port` could be bound on 127.0.0.1 a moment ago.
    public static func isFree(_ port: Int) -> Bool {
        (1...65535).contains(port) && bound(port) != nil
    }

    /// A socket connected to 127.0.0.1:`port` (reads time out after `receiveTimeoutSeconds`),
    /// or nil when nothing accepts there. The caller closes it.
    public static func connect(_ port: Int, receiveTimeoutSeconds: Int = 1) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = address(port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Binds `port` (0: the kernel picks) and closes again; the port bound, or nil.
    private static func bound(_ port: Int) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = address(port)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { return nil }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return named == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    private static func address(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}
