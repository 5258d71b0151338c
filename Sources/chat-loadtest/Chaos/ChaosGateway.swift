import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `chat-gateway serve` child that a chaos run kills and restarts: always the
/// same binary, data folder and loopback port, every message stored, the per-user
/// and per-connection rates off (the run saturates), log level `warning`. Its output
/// is appended to one log file across restarts, and its pid is written to a file so
/// that `scripts/chaos` can reap it should this tool itself die.
final class ChaosGateway {
    let binary: String
    let dataDirectory: String
    let logPath: String
    let pidPath: String?
    let port: Int
    /// Settings on top of the chaos defaults (a cluster node's backend, bus and id).
    private let extraEnvironment: [String: String]
    private var process: Process?
    private let log: FileHandle
    /// Whether the current process was killed by the run (a death the run did not cause is a finding).
    private var killedOnPurpose = false

    init(binary: String, dataDirectory: String, logPath: String, pidPath: String?, port: Int? = nil,
         environment: [String: String] = [:]) throws(LoadTestError) {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw LoadTestError("--gateway-binary \(binary): not an executable file")
        }
        self.binary = binary
        self.dataDirectory = dataDirectory
        self.logPath = logPath
        self.pidPath = pidPath
        if let port {
            self.port = port
        } else {
            self.port = try ChaosLoopback.freePort()
        }
        extraEnvironment = environment
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw LoadTestError("cannot create \(dataDirectory): \(error)")
        }
        guard FileManager.default.createFile(atPath: logPath, contents: nil), let log = FileHandle(forWritingAtPath: logPath) else {
            throw LoadTestError("cannot write \(logPath)")
        }
        self.log = log
    }

    /// The environment of every start: the caller's, without its own CHAT_GATEWAY_ settings.
    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CHAT_GATEWAY_") }
        environment["CHAT_GATEWAY_STORAGE_DATADIRECTORY"] = dataDirectory
        environment["CHAT_GATEWAY_SERVER_PORT"] = String(port)
        environment["CHAT_GATEWAY_LIMITS_USERMESSAGESPERSECOND"] = "0"
        environment["CHAT_GATEWAY_LIMITS_CONNECTIONREQUESTSPERSECOND"] = "0"
        environment["CHAT_GATEWAY_LOG_LEVEL"] = "warning"
        environment.merge(extraEnvironment) { _, extra in extra }
        return environment
    }

    /// Starts the gateway and waits until `/healthz` answers 200; returns the seconds that took.
    @discardableResult
    func start(timeout: Double) throws(LoadTestError) -> Double {
        let began = MonotonicClock.now()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve"]
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        do {
            try process.run()
        } catch {
            throw LoadTestError("cannot start \(binary): \(error)")
        }
        self.process = process
        killedOnPurpose = false
        if let pidPath {
            _ = FileManager.default.createFile(atPath: pidPath, contents: Data("\(process.processIdentifier)\n".utf8))
        }
        let deadline = began + MonotonicClock.nanoseconds(timeout)
        while MonotonicClock.now() < deadline {
            if let death = unexpectedExit { throw LoadTestError("the gateway \(death) while starting; log: \(logPath)") }
            if ChaosLoopback.isHealthy(port: port) { return Double(MonotonicClock.now() - began) / 1e9 }
            usleep(20_000)
        }
        throw LoadTestError("the gateway was not healthy on port \(port) within \(Format.fixed(timeout, 0)) s; log: \(logPath)")
    }

    /// SIGKILL: no drain, no flush, no chance to finish a commit or a reply. Waits until it is reaped.
    func killHard() {
        guard let process, process.isRunning else { return }
        killedOnPurpose = true
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A clean stop at the end: SIGTERM (drain), then SIGKILL after 15 s.
    func stop() {
        guard let process, process.isRunning else { return }
        killedOnPurpose = true
        kill(process.processIdentifier, SIGTERM)
        let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(15)
        while process.isRunning && MonotonicClock.now() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if let pidPath { try? FileManager.default.removeItem(atPath: pidPath) }
    }

    /// How the gateway died if it exited without the run killing it ("exited with 1",
    /// "died of signal 11"); nil while it runs or after a kill the run sent.
    var unexpectedExit: String? {
        guard let process, !killedOnPurpose, !process.isRunning else { return nil }
        return process.terminationReason == .uncaughtSignal
            ? "died of signal \(process.terminationStatus)" : "exited with \(process.terminationStatus)"
    }
}
