import Foundation

/// A Redis Cluster of the test's own: 6 redis-server processes on loopback (3 masters with
/// a replica each, as `scripts/redis-cluster` lays them out), created with `redis-cli
/// --cluster create`, with a low `cluster-node-timeout` so a killed master is noticed
/// quickly. The processes are children of the test (killed on deinit, their folder
/// removed). Ports: 6 consecutive free ones and their cluster bus ports (+10000), the
/// client ports from `CHAT_TEST_PORT_RANGE` when it is set and ends at most at 55535.
public final class RedisTestCluster: @unchecked Sendable {
    public static let cli: String? = ["/usr/bin/redis-cli", "/usr/local/bin/redis-cli"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    public static var isAvailable: Bool { RedisTestServer.isAvailable && cli != nil }
    public static let nodeCount = 6

    public private(set) var ports: [Int]
    public let directory: String
    private var processes: [Int: ChildProcess] = [:]

    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }

    /// `redis://127.0.0.1:P1,127.0.0.1:P2,...` (`RedisEndpoint.parseList`).
    public var seedList: String {
        "redis://" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ",")
    }

    /// Starts the nodes and creates the cluster; should a port be taken before a node binds
    /// it, starts over on other ports (3 tries).
    public init(nodeTimeoutMs: Int = 1000) throws {
        directory = NSTemporaryDirectory() + "redis-cluster-\(UUID().uuidString)"
        ports = []
        var failure: any Error = Failed(description: "no 6 free consecutive ports with free bus ports")
        for _ in 0..<3 {
            guard let base = Self.freeBase() else { continue }
            ports = Array(base..<base + Self.nodeCount)
            do {
                try start(nodeTimeoutMs: nodeTimeoutMs)
                return
            } catch {
                failure = error
                stopAll()
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw failure
    }

    private func start(nodeTimeoutMs: Int) throws {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for port in ports {
            processes[port] = try ChildProcess(RedisTestServer.binary ?? "/usr/bin/redis-server", [
                "--bind", "127.0.0.1", "--port", "\(port)", "--protected-mode", "no", "--save", "", "--appendonly", "no",
                "--cluster-enabled", "yes", "--cluster-config-file", "\(directory)/nodes-\(port).conf",
                "--cluster-node-timeout", "\(nodeTimeoutMs)", "--dir", directory,
            ], outputPath: "\(directory)/redis-\(port).log")
        }
        for port in ports {
            let started = wait(seconds: 5) { (try? self.cli(port, "PING")) == "PONG" }
            // A node that could not bind its port is gone (another server may have answered).
            guard started, processes[port]?.isRunning == true else {
                throw Failed(description: "node \(port) did not start")
            }
        }
        let create = try ChildProcess.run(Self.cli ?? "/usr/bin/redis-cli",
                                          ["--cluster", "create"] + ports.map { "127.0.0.1:\($0)" }
                                              + ["--cluster-replicas", "1", "--cluster-yes"], timeoutSeconds: 30)
        guard create.status == 0 else { throw Failed(description: "cluster create failed: \(create.output.suffix(500))") }
        try waitUntilHealthy()
    }

    private func stopAll() {
        for process in processes.values {
            process.signal(SIGKILL)
            process.waitUntilExit()
        }
        processes = [:]
    }

    /// Waits until every running node says `cluster_state:ok` and every replica's link to
    /// its master is up (so that a failover has data to take over).
    public func waitUntilHealthy(seconds: Double = 15) throws {
        let ok = wait(seconds: seconds) {
            self.processes.keys.allSatisfy { port in
                guard let info = try? self.cli(port, "CLUSTER", "INFO"), info.contains("cluster_state:ok") else { return false }
                guard let replication = try? self.cli(port, "INFO", "replication") else { return false }
                return replication.contains("role:master") || replication.contains("master_link_status:up")
            }
        }
        guard ok else { throw Failed(description: "the cluster did not become healthy within \(seconds) s") }
    }

    /// A choice of 6 consecutive client ports whose bus ports are free too.
    private static func freeBase() -> Int? {
        // Below Linux's ephemeral ports (32768 on), bus ports included, so that no
        // outgoing connection takes one between this check and the server's bind.
        var low = 12_000
        var high = 22_000
        if let range = ProcessInfo.processInfo.environment["CHAT_TEST_PORT_RANGE"]?.split(separator: "-"),
           range.count == 2, let from = Int(range[0]), let to = Int(range[1]), from <= to, to <= 55_535 {
            low = from
            high = to
        }
        guard high - low >= nodeCount else { return nil }
        for _ in 0..<64 {
            let base = Int.random(in: low...(high - nodeCount + 1))
            let all = (base..<base + nodeCount).flatMap { [$0, $0 + 10_000] }
            if all.allSatisfy(LoopbackPort.isFree) { return base }
        }
        return nil
    }

    /// `redis-cli -p port args...`, its output without the trailing newline.
    @discardableResult
    public func cli(_ port: Int, _ arguments: String...) throws -> String {
        try cli(port, arguments)
    }

    public func cli(_ port: Int, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(Self.cli ?? "/usr/bin/redis-cli", ["-h", "127.0.0.1", "-p", "\(port)"] + arguments,
                                          timeoutSeconds: 10)
        guard result.status == 0 else { throw Failed(description: "redis-cli \(arguments): \(result.output)") }
        var output = result.output
        while output.hasSuffix("\n") { output.removeLast() }
        return output
    }

    public func nodeID(_ port: Int) throws -> String {
        try cli(port, "CLUSTER", "MYID")
    }

    /// The port of the master serving `slot`, as the node at `asking` sees it.
    public func master(ofSlot slot: Int, asking: Int? = nil) throws -> Int? {
        let nodes = try cli(asking ?? runningPorts[0], "CLUSTER", "NODES")
        for line in nodes.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 9, fields[2].contains("master"), !fields[2].contains("fail") else { continue }
            for range in fields[8...] {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                if (bounds.count == 1 && bounds[0] == slot) || (bounds.count == 2 && bounds[0] <= slot && slot <= bounds[1]) {
                    return Int(fields[1].split(separator: ":")[1].split(separator: "@")[0])
                }
            }
        }
        return nil
    }

    /// The port of the replica of the master at `port`.
    public func replica(of port: Int) throws -> Int? {
        let id = try nodeID(port)
        let nodes = try cli(port, "CLUSTER", "NODES")
        for line in nodes.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count >= 4, fields[3] == id {
                return Int(fields[1].split(separator: ":")[1].split(separator: "@")[0])
            }
        }
        return nil
    }

    /// The masters' ports, as the node at the first running port sees them.
    public func masterPorts() throws -> [Int] {
        try cli(runningPorts[0], "CLUSTER", "NODES").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 9, fields[2].contains("master"), !fields[2].contains("fail") else { return nil }
            return Int(fields[1].split(separator: ":")[1].split(separator: "@")[0])
        }.sorted()
    }

    public var runningPorts: [Int] { ports.filter { processes[$0] != nil } }

    /// SIGKILL the node at `port`, as a crash looks to the cluster.
    public func kill(_ port: Int) {
        guard let process = processes.removeValue(forKey: port) else { return }
        process.signal(SIGKILL)
        process.waitUntilExit()
    }

    /// Polls `condition` every 50 ms for up to `seconds`.
    public func wait(seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    deinit {
        stopAll()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
