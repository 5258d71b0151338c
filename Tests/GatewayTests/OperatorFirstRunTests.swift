import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// What an operator meets on a first run: a browser pointed at the gateway reaches the
/// console, admin-API calls are logged (every one, with its outcome) and counted apart from
/// WebSocket handshakes, other plain HTTP refusals are logged as such, and the start line
/// and `--version` say which build runs.
@Suite("An operator's first run", .serialized)
struct OperatorFirstRunTests {
    private static func scrape(_ gateway: TestGateway) async throws -> String {
        try await gateway.http("GET", "/metrics").body
    }

    @Test func theRootPointsAtTheConsoleAndANodeWithoutOneAnswers404() async throws {
        let withConsole = try await TestGateway.chat { settings, _ in settings.consoleEnabled = true }
        let root = try await withConsole.http("GET", "/")
        #expect(root.status == 302)
        #expect(root.headers["location"] == "/console", "\(root.headers)")
        let without = try await TestGateway.chat { settings, _ in settings.consoleEnabled = false }
        #expect(try await without.http("GET", "/").status == 404)
    }

    @Test func adminCallsAreLoggedAndCountedApartFromHandshakes() async throws {
        let capture = OperationsTests.LogCapture()
        let gateway = try await TestGateway.chat(logger: capture.logger())
        #expect(try await gateway.admin("POST", "/v1/admin/users", body: ["id": "ops-alice", "name": "Alice"]).status == 200)
        #expect(try await gateway.admin("GET", "/v1/admin/users/ops-alice", key: "not-the-key").status == 401)
        #expect(try await gateway.http("GET", "/no/such/page").status == 404)
        _ = try await gateway.upgrade(path: "/v1/ws?token=not-a-jwt")

        let metrics = try await Self.scrape(gateway)
        #expect(metrics.contains(#"chat_admin_requests_total{status="200"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"chat_admin_requests_total{status="401"} 1"#))
        #expect(metrics.contains(#"chat_handshakes_total{outcome="401"} 1"#), "only the refused upgrade is a handshake")
        #expect(metrics.contains(#"chat_handshakes_total{outcome="404"} 0"#), "a 404 page is not a handshake")

        var objects: [[String: Any]] = []
        for _ in 0..<100 {
            objects = capture.lines.map(parseJSONObject)
            if objects.contains(where: { $0["event"] as? String == "http.rejected" }) { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let admin = objects.filter { $0["event"] as? String == "admin.request" }
        #expect(admin.map { $0["status"] as? Int } == [200, 401], "\(admin)")
        #expect(admin.first?["method"] as? String == "POST" && admin.first?["path"] as? String == "/v1/admin/users")
        let rejected = objects.filter { $0["event"] as? String == "http.rejected" }
        #expect(rejected.map { $0["path"] as? String } == ["/no/such/page"])
        let handshakes = objects.filter { $0["event"] as? String == "handshake.rejected" }
        #expect(handshakes.map { $0["status"] as? Int } == [401], "\(handshakes)")
        #expect(!capture.lines.contains { $0.contains(gateway.chat.admin.apiKey) || $0.contains("not-the-key") })
        let start = objects.first { $0["event"] as? String == "gateway.start" }
        #expect(start?["version"] as? String == GatewayVersion.release && start?["protocol"] as? String == "1.2")
        #expect(start?["port"] as? Int == gateway.port && start?["eventLoops"] is Int, "numbers stay JSON numbers: \(String(describing: start))")
    }

    @Test func numbersAndFlagsAreTypedAndARateLimitedSendNamesItsConnection() async throws {
        let capture = OperationsTests.LogCapture()
        let gateway = try await TestGateway.chat(logger: capture.logger()) { _, chat in chat.limits.userMessagesPerSecond = 1 }
        let alice = try await gateway.connect("log-alice")
        try await gateway.createUsers(["log-bob"])
        let channel = try alice.createGroup(["log-bob"])
        var limited: [String: Any]?
        for n in 0..<10 where limited == nil {
            _ = try alice.request("message.send", ["channelId": channel, "text": "m\(n)"])
            limited = capture.lines.map(parseJSONObject).first { $0["event"] as? String == "message.rate_limited" }
        }
        for _ in 0..<100 where limited == nil {
            try await Task.sleep(for: .milliseconds(10))
            limited = capture.lines.map(parseJSONObject).first { $0["event"] as? String == "message.rate_limited" }
        }
        let opened = capture.lines.map(parseJSONObject).first {
            $0["event"] as? String == "connection.open" && $0["user"] as? String == "log-alice"
        }
        let line = try #require(limited, "no message.rate_limited line")
        let connection = try #require(opened?["conn"] as? Int, "connection.open's conn is a number: \(String(describing: opened))")
        #expect(opened?["deflate"] as? Bool == false, "a flag is a JSON boolean")
        #expect(line["conn"] as? Int == connection, "the line names the connection that sent: \(line)")
        #expect(line["user"] as? String == "log-alice" && (line["retryAfterMs"] as? Int ?? 0) > 0, "\(line)")
        alice.connection.dropConnection()
        var closed: [String: Any]?
        for _ in 0..<200 where closed == nil {
            try await Task.sleep(for: .milliseconds(10))
            closed = capture.lines.map(parseJSONObject).first { $0["event"] as? String == "connection.close" && $0["conn"] as? Int == connection }
        }
        #expect(closed?["code"] is Int, "close codes are numbers: \(String(describing: closed))")
    }

    @Test func versionNamesTheReleaseAndTheProtocol() throws {
        let binary = try DurabilityTests.gatewayBinary()
        let result = try ChildProcess.run(binary.path, ["--version"], timeoutSeconds: 20)
        #expect(result.status == 0)
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == GatewayVersion.description)
    }

    @Test func theTerminalClientExitsZeroOnlyAfterANormalSession() async throws {
        let binary = try DurabilityTests.gatewayBinary().path
        let gateway = try await TestGateway.chat()
        let token = try await gateway.token(for: "terminal-user")
        func client(url: String, token: String) async throws -> (status: Int32, output: String) {
            // The user types /quit a second after starting it.
            try await offThePool {
                try ChildProcess.run("/bin/sh", ["-c", "(sleep 1; echo /quit) | '\(binary)' client --url \(url) --token \(token)"],
                                     timeoutSeconds: 30)
            }
        }
        let url = "ws://127.0.0.1:\(gateway.port)"
        let normal = try await client(url: url, token: token)
        #expect(normal.status == 0, "\(normal.output)")
        let refused = try await client(url: url, token: "not-a-jwt")
        #expect(refused.status == 1, "a refused token: \(refused.output)")
        let unreachable = try await client(url: "ws://127.0.0.1:1", token: token)
        #expect(unreachable.status != 0, "nothing listening: \(unreachable.output)")
    }

    /// `ops/systemd/chat-gateway.service` as systemd reads it (every key known, the binary
    /// runnable: the built one stands in for /usr/local/bin), and a stop timeout that lets
    /// the default drain finish.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "needs systemd-analyze"))
    func theServiceUnitVerifies() async throws {
        let root = repositoryRoot
        let unit = try String(contentsOf: root.appendingPathComponent("ops/systemd/chat-gateway.service"), encoding: .utf8)
        let binary = try DurabilityTests.gatewayBinary().path
        let folder = NSTemporaryDirectory() + "unit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/chat-gateway.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/chat-gateway", with: binary).write(toFile: path, atomically: true, encoding: .utf8)
        let verified = try await offThePool { try ChildProcess.run("/usr/bin/systemd-analyze", ["verify", path], timeoutSeconds: 60) }
        #expect(verified.status == 0 && verified.output.isEmpty, "systemd-analyze verify: \(verified.output)")
        let stopTimeout = unit.split(separator: "\n").first { $0.hasPrefix("TimeoutStopSec=") }
            .flatMap { Int($0.dropFirst("TimeoutStopSec=".count).prefix { $0.isNumber }) }
        #expect((stopTimeout ?? 0) > GatewayConfiguration().shutdown.drainSeconds, "systemd must wait for the drain")
        #expect(unit.contains("LimitNOFILE="))
    }
}
