import Foundation

/// A redis-server process of the test's own on a free loopback port (no persistence),
/// so a test can stop and restart it. Tests that need one are skipped when Debian's
/// redis-server is not installed.
public final class RedisTestServer: @unchecked Sendable {
    public static let binary: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var isAvailable: Bool { binary != nil }

    public private(set) var port: Int
    /// More `redis-server` options (`--requirepass`, `--tls-port`, `--enable-debug-command`).
    public private(set) var arguments: [String]
    private var process: ChildProcess?

    /// With `tlsOnly`, `port` is the TLS port and the plain one is off. Without `port`, a free
    /// one is picked; should another test's listener take it before redis-server binds it,
    /// another is tried.
    public init(port: Int? = nil, arguments: [String] = [], tlsOnly: Bool = false) throws {
        var attempt = 0
        while true {
            let chosen = port ?? Self.freePort()
            self.port = chosen
            self.tlsOnly = tlsOnly
            self.arguments = tlsOnly ? ["--port", "0", "--tls-port", "\(chosen)"] + arguments : ["--port", "\(chosen)"] + arguments
            do {
                try start()
                return
            } catch {
                attempt += 1
                if port != nil || attempt == 5 { throw error }
            }
        }
    }

    private var tlsOnly = false

    public struct StartFailed: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts redis-server; up once it answers on `port` (a listener there that is not this
    /// process, which then fails to bind, does not count).
    public func start() throws {
        let child = try ChildProcess(Self.binary ?? "/usr/bin/redis-server", [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no",
        ] + arguments)
        process = child
        for _ in 0..<200 {
            if !child.isRunning { break }
            if tlsOnly ? Self.accepts(port: port) : Self.answersPing(port: port) {
                // A TLS port cannot be asked in plain text: a server that could not bind is gone by now.
                if tlsOnly { usleep(100_000) }
                if child.isRunning { return }
                break
            }
            usleep(10_000)
        }
        kill()
        throw StartFailed(description: "redis-server did not start on port \(port) (\(arguments.joined(separator: " ")))")
    }

    /// A Redis on `port` answers `PING` (with PONG, or NOAUTH when it wants a password).
    private static func answersPing(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard connected else { return false }
        let ping = Array("PING\r\n".utf8)
        guard write(fd, ping, ping.count) == ping.count else { return false }
        var reply = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &reply, reply.count)
        guard count > 0 else { return false }
        let text = String(decoding: reply[..<count], as: UTF8.self)
        return text.hasPrefix("+PONG") || text.hasPrefix("-NOAUTH")
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
