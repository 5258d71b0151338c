import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The shared services a cluster chaos run breaks: a Redis server of its own (killed with
/// SIGKILL and started again on the same port: nothing kept, as a restarted bus has) or a
/// Redis the caller runs (a Redis Cluster: `ExternalRedis`, broken and mended by its
/// commands), and PostgreSQL, stopped and started by the commands the caller gives
/// (`scripts/postgres`, which runs it as the `postgres` user).
final class ChaosDependencies {
    /// A Redis the caller runs: its URL and the shell commands of the Redis fault.
    struct ExternalRedis {
        var url: String
        var kill: String
        var start: String
    }

    let redisPort: Int
    private let external: ExternalRedis?
    /// An external Redis's fault in progress: its kill and start commands, run one after
    /// the other off the schedule's thread, so the load goes on while, say, a replica
    /// takes over; `startRedis` waits for them and reports what failed.
    private let externalFault = DispatchGroup()
    private let externalFailure = FaultFailure()
    /// Seconds between the Redis fault and its mending that the schedule should leave.
    var redisDownSeconds: Double { external == nil ? 1 : 6 }
    private let redisBinary: String
    private let redisLog: FileHandle
    /// Where Redis's pid goes at each start, for a wrapper to reap it should this tool die.
    private let redisPidPath: String
    private var redis: Process?
    private let postgresStop: String
    private let postgresStart: String

    init(redisBinary: String, external: ExternalRedis? = nil, logPath: String, pidPath: String, postgresStop: String,
         postgresStart: String) throws(LoadTestError) {
        self.external = external
        self.redisBinary = redisBinary
        redisPidPath = pidPath
        self.postgresStop = postgresStop
        self.postgresStart = postgresStart
        redisPort = try ChaosLoopback.freePort()
        guard FileManager.default.createFile(atPath: logPath, contents: nil), let log = FileHandle(forWritingAtPath: logPath)
        else { throw LoadTestError("cannot write \(logPath)") }
        redisLog = log
    }

    var redisURL: String { external?.url ?? "redis://127.0.0.1:\(redisPort)" }

    /// Starts redis-server and waits until it accepts connections (an external Redis: runs
    /// its start command, which must return once it serves again).
    func startRedis(timeout: Double = 10) throws(LoadTestError) {
        if external != nil {
            externalFault.wait()
            if let failure = externalFailure.error.withLock({ $0.take() }) { throw failure }
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: redisBinary)
        process.arguments = ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process.standardOutput = redisLog
        process.standardError = redisLog
        do {
            try process.run()
        } catch {
            throw LoadTestError("cannot start \(redisBinary): \(error)")
        }
        redis = process
        _ = FileManager.default.createFile(atPath: redisPidPath, contents: Data("\(process.processIdentifier)\n".utf8))
        let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(timeout)
        while MonotonicClock.now() < deadline {
            if ChaosLoopback.accepts(port: redisPort) { return }
            if !process.isRunning { throw LoadTestError("redis-server exited while starting") }
            usleep(20_000)
        }
        throw LoadTestError("redis-server did not listen on \(redisPort) within \(Format.fixed(timeout, 0)) s")
    }

    /// SIGKILL, reaped (an external Redis: its kill command, then its start command, in the
    /// background; `startRedis` waits for them).
    func killRedis() throws(LoadTestError) {
        if let external {
            let log = redisLog.fileDescriptor
            let failure = externalFailure
            DispatchQueue.global().async(group: externalFault) {
                do throws(LoadTestError) {
                    try Self.shell(external.kill, log: log)
                    try Self.shell(external.start, log: log)
                } catch {
                    failure.error.withLock { $0 = error }
                }
            }
            return
        }
        guard let redis, redis.isRunning else { return }
        kill(redis.processIdentifier, SIGKILL)
        redis.waitUntilExit()
    }

    func stopPostgres() throws(LoadTestError) { try Self.shell(postgresStop, log: redisLog.fileDescriptor) }
    func startPostgres() throws(LoadTestError) { try Self.shell(postgresStart, log: redisLog.fileDescriptor) }

    /// Runs `command` with /bin/sh and waits for it, its output appended to the log.
    /// posix_spawn and waitpid rather than Foundation's `Process`, whose `waitUntilExit`
    /// never returned for a command that started a daemon (`pg_ctl start`).
    private static func shell(_ command: String, log: Int32) throws(LoadTestError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, log, 1)
        posix_spawn_file_actions_adddup2(&actions, log, 2)
        let arguments = ["/bin/sh", "-c", command]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, environ)
        guard spawned == 0 else { throw LoadTestError("cannot run \(command): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw LoadTestError("\(command) failed (wait status \(status))")
        }
    }
}

/// What an external Redis fault's commands failed with, set off the schedule's thread.
private final class FaultFailure: Sendable {
    let error = Mutex<LoadTestError?>(nil)
}
