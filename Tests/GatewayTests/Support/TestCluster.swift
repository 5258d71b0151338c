import Foundation
import Logging
import ServiceTestSupport
import Testing
@testable import Gateway

/// Gateway nodes on one PostgreSQL database and one Redis or a 3-master Redis Cluster
/// (PROTOCOL.md §13), each a real gateway on its own loopback port, on one wall clock as
/// machines kept in time by NTP.
final class TestCluster {
    /// What the nodes' bus runs on.
    enum RedisKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// One redis-server.
        case single
        /// A Redis Cluster of 3 masters with a replica each (`cluster.redisUrl` lists its seeds).
        case sharded

        var testDescription: String { rawValue }

        /// The kinds this machine can run (a Redis Cluster needs redis-cli to be created).
        static var available: [RedisKind] { RedisTestCluster.isAvailable ? allCases : [.single] }
    }

    let database: PostgresTestDatabase
    private let single: RedisTestServer?
    /// The Redis Cluster of a `.sharded` cluster.
    let sharded: RedisTestCluster?
    let nodes: [TestGateway]

    /// The one Redis of a `.single` cluster.
    var redis: RedisTestServer {
        guard let single else { preconditionFailure("this cluster's bus runs on a Redis Cluster") }
        return single
    }

    private init(database: PostgresTestDatabase, single: RedisTestServer?, sharded: RedisTestCluster?, nodes: [TestGateway]) {
        self.database = database
        self.single = single
        self.sharded = sharded
        self.nodes = nodes
    }

    /// `count` nodes on a fresh database and `redis` (a new redis-server when nil), reaching
    /// it at `redisURL(port)` (plain `redis://` by default); with `waitForBus`, returns once
    /// every node's bus is up.
    /// `kind` `.sharded` starts a Redis Cluster of its own (`redis` and `redisURL` are for
    /// a single Redis).
    static func start(nodes count: Int = 2, kind: RedisKind = .single, redis: RedisTestServer? = nil,
                      redisURL: ((Int) -> String)? = nil, logger: Logger = TestGateway.suiteLogger, waitForBus: Bool = true,
                      configure: @escaping (inout GatewayConfiguration) -> Void = { _ in }) async throws -> TestCluster {
        let database = try await PostgresTestDatabase.make()
        let single = kind == .single ? try redis ?? RedisTestServer() : nil
        // Starting six servers and creating the cluster waits for seconds: on a thread of its
        // own, never on the test pool's few threads the other suites need.
        let sharded = kind == .sharded ? try await offThePool { try RedisTestCluster() } : nil
        let url = sharded?.seedList ?? single.map { redisURL?($0.port) ?? "redis://127.0.0.1:\($0.port)" } ?? ""
        var nodes: [TestGateway] = []
        for n in 1...count {
            nodes.append(try await TestGateway.chat(logger: logger) { _, chat in
                chat.storage.backend = .postgres; chat.storage.postgresURL = database.url
                chat.cluster.redisURL = url
                chat.cluster.nodeID = "node-\(n)"
                configure(&chat)
            })
        }
        let latest = nodes.map { $0.clock.now() }.max() ?? 0
        for node in nodes { node.clock.advance(by: latest - node.clock.now()) }
        for node in nodes where waitForBus {
            try await eventually("node's bus up") { node.server.router.chat?.bus?.isReachable == true }
        }
        return TestCluster(database: database, single: single, sharded: sharded, nodes: nodes)
    }

    /// Lets a paused Redis go, stops the nodes, then drops the database (dropped first, it
    /// would fail writes still on their way and make each node's stop wait for them).
    func end() async {
        single?.resume()
        for node in nodes { node.server.stop() }
        await database.drop()
    }

    /// `redis-cli` against this cluster's Redis (plain port).
    @discardableResult
    func redisCLI(_ arguments: [String]) throws -> String {
        let result = try ChildProcess.run("/usr/bin/redis-cli", ["-h", "127.0.0.1", "-p", "\(redis.port)"] + arguments,
                                          timeoutSeconds: 10)
        return result.output
    }

    /// The value of the `/metrics` line of node `node` that starts with `line`, 0 when absent.
    func metric(_ node: Int, _ line: String) async throws -> Double {
        let metrics = try await nodes[node].http("GET", "/metrics").body
        let found = metrics.split(separator: "\n").first { $0.hasPrefix(line + " ") }
        return found?.split(separator: " ").last.flatMap { Double($0) } ?? 0
    }

    /// A group of `members` created by `creator`, retried while a member's first connect
    /// (on another node) has not reached the creator's node yet.
    static func group(by creator: RawChatClient, with members: [String], name: String) async throws -> String {
        var lastError = ""
        for _ in 0..<200 {
            let reply = try creator.request("channel.create", ["channelType": "group", "name": name, "userIds": members])
            if reply["type"] as? String == "ok", let id = (reply["result"] as? [String: Any])?["id"] as? String { return id }
            lastError = "\(reply)"
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestClientError("channel.create kept failing: \(lastError)")
    }

    /// Polls `condition` every 10 ms for up to `seconds`; records an issue naming `what` when it never holds.
    static func eventually(_ what: String, seconds: Double = 5, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting for: \(what)")
    }
}
