import CTestSpawn
import Foundation

/// A child process for tests (see CTestSpawn for why not Foundation's `Process`): its
/// output goes to a file, every descriptor but 0–2 is closed in it.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let outputPath: String?
    private var status: Int32?

    /// Starts `executable` with `arguments`; `environment` nil: this process's.
    public init(_ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
                workingDirectory: String? = nil, outputPath: String? = nil) throws {
        self.outputPath = outputPath
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            env.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = test_spawn(executable, argv, env, workingDirectory, outputPath, &child)
        guard result == 0 else { throw ChildProcessError("spawn \(executable): errno \(result)") }
        pid = child
    }

    /// Runs to the end (bounded by `timeoutSeconds`, then killed) and returns its exit status
    /// and output.
    public static func run(_ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
                           timeoutSeconds: Double = 90) throws -> (status: Int32, output: String) {
        let output = NSTemporaryDirectory() + "child-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let child = try ChildProcess(executable, arguments, environment: environment, outputPath: output)
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while child.isRunning && Date() < deadline { usleep(20_000) }
        if child.isRunning {
            child.signal(SIGKILL)
            _ = child.waitUntilExit()
            throw ChildProcessError("\(executable) did not finish within \(timeoutSeconds) s")
        }
        return (child.waitUntilExit(), (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    public var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            status = Self.exitStatus(raw)
            return false
        }
        return result == 0
    }

    /// The exit status (128 + signal when killed by one), waiting for it.
    @discardableResult
    public func waitUntilExit() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let exit = Self.exitStatus(raw)
        status = exit
        return exit
    }

    public var terminationStatus: Int32 { status ?? -1 }

    public func signal(_ signal: Int32) {
        if status == nil { kill(pid, signal) }
    }

    private static func exitStatus(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
