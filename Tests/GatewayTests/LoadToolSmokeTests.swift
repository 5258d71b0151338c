import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// `chat-loadtest` end to end against a gateway: provisioning over keep-alive
/// admin connections, connects, traffic, and a clean JSON report.
@Suite("chat-loadtest against a live gateway")
struct LoadToolSmokeTests {
    static func toolBinary() throws -> URL {
        let gateway = try DurabilityTests.gatewayBinary()
        let tool = gateway.deletingLastPathComponent().appendingPathComponent("chat-loadtest")
        guard FileManager.default.isExecutableFile(atPath: tool.path) else {
            throw TestClientError("chat-loadtest not found at \(tool.path); build it with `swift build --build-tests`")
        }
        return tool
    }

    /// Runs the tool (bounded: 90 s) and returns its exit status and JSON report.
    static func run(_ arguments: [String]) throws -> (status: Int32, report: [String: Any]) {
        // The report is the output's last line (progress goes to stderr, into the same file).
        let (status, output) = try ChildProcess.run(try toolBinary().path, arguments + ["--json"], timeoutSeconds: 90)
        let report = output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? ""
        return (status, parseJSONObject(report))
    }

    @Test("room: every delivery arrives once, plain and TLS", arguments: [false, true])
    func room(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let url = "\(tls ? "wss" : "ws")://127.0.0.1:\(gateway.port)"
        let key = gateway.chat.admin.apiKey
        let (status, report) = try await offThePool {
            try Self.run(["room", "--url", url, "--admin-key", key, "--members", "30", "--rate", "20",
                          "--warmup", "0.5", "--duration", "1.5", "--user-prefix", "smoke\(tls ? "t" : "p")"])
        }
        #expect(status == 0, "\(report)")
        #expect(report["clean"] as? Bool == true)
        let deliveries = try #require(report["deliveries"] as? [String: Any])
        #expect((deliveries["received"] as? Int ?? 0) > 0)
        #expect(deliveries["loss"] as? Int == 0)
        #expect(deliveries["duplicates"] as? Int == 0)
    }

    @Test("idle: 200 connections provisioned over keep-alive admin connections and held")
    func idle() async throws {
        let gateway = try await TestGateway.chat(tls: true)
        let url = "wss://127.0.0.1:\(gateway.port)"
        let key = gateway.chat.admin.apiKey
        let (status, report) = try await offThePool {
            try Self.run(["idle", "--url", url, "--admin-key", key, "--connections", "200", "--hold", "0.5",
                          "--pid", String(getpid()), "--admin-concurrency", "4"])
        }
        #expect(status == 0, "\(report)")
        #expect(report["made"] as? Int == 200)
        #expect(report["failed"] as? Int == 0)
        #expect(report["closedByGateway"] as? Int == 0)
    }
}
