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
            let chosen = port ?? LoopbackPort.free()
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
        guard let fd = LoopbackPort.connect(port) else { return false }
        defer { close(fd) }
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

    /// Something accepts connections on `port`.
    public static func accepts(port: Int) -> Bool {
        guard let fd = LoopbackPort.connect(port) else { return false }
        close(fd)
        return true
    }
}
