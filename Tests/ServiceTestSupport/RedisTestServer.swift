import Foundation

/// A redis-server process of the test's own on a free loopback port (no persistence),
/// so a test can stop and restart it. Tests that need one are skipped when Debian's
/// redis-server is not installed.
public final class RedisTestServer: @unchecked Sendable {
    public static let binary: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var isAvailable: Bool { binary != nil }

    public let port: Int
    /// More `redis-server` options (`--requirepass`, `--tls-port`, `--enable-debug-command`).
    public let arguments: [String]
    private var process: ChildProcess?

    /// With `tlsOnly`, `port` is the TLS port and the plain one is off.
    public init(port: Int? = nil, arguments: [String] = [], tlsOnly: Bool = false) throws {
        let port = port ?? Self.freePort()
        self.port = port
        self.arguments = tlsOnly ? ["--port", "0", "--tls-port", "\(port)"] + arguments : ["--port", "\(port)"] + arguments
        try start()
    }

    public func start() throws {
        process = try ChildProcess(Self.binary ?? "/usr/bin/redis-server", [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no",
        ] + arguments)
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

    /// SIGSTOP: the server keeps its sockets and answers nothing (a paused or partitioned
    /// Redis as its clients see it), until `resume()`.
    public func pause() {
        process?.signal(SIGSTOP)
    }

    public func resume() {
        process?.signal(SIGCONT)
    }

    deinit {
        resume()
        kill()
    }

    /// A free loopback port: the kernel's choice, or one of `CHAT_TEST_PORT_RANGE`
    /// (`52500-52999`) when set, for machines where each user keeps to a range.
    public static func freePort() -> Int {
        if let range = ProcessInfo.processInfo.environment["CHAT_TEST_PORT_RANGE"]?.split(separator: "-"),
           range.count == 2, let low = Int(range[0]), let high = Int(range[1]), low <= high {
            for _ in 0..<64 {
                let port = Int.random(in: low...high)
                if canBind(port) { return port }
            }
        }
        return kernelChosenPort()
    }

    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func kernelChosenPort() -> Int {
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
