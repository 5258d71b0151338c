import Foundation

/// A redis-server process of the test's own on a free loopback port (no persistence),
/// so a test can stop and restart it. Tests that need one are skipped when Debian's
/// redis-server is not installed.
public final class RedisTestServer: @unchecked Sendable {
    public static let binary: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var isAvailable: Bool { binary != nil }

    public let port: Int
    private var process: ChildProcess?

    public init(port: Int? = nil) throws {
        self.port = port ?? Self.freePort()
        try start()
    }

    public func start() throws {
        process = try ChildProcess(Self.binary ?? "/usr/bin/redis-server", [
            "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no",
        ])
        // Up once it accepts a connection.
        for _ in 0..<200 {
            if Self.accepts(port: port) { return }
            usleep(10_000)
        }
        throw CocoaError(.fileNoSuchFile)
    }

    /// SIGKILL, as a crash or a restart of the server looks to its clients.
    public func kill() {
        guard let process else { return }
        process.signal(SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit { kill() }

    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    public static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
