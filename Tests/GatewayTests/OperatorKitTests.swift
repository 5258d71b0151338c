import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// The Grafana dashboard (ops/grafana/chat-gateway.json) and the alert rules
/// (ops/prometheus/alerts.yaml) name only metrics and labels a gateway exposes: a gateway
/// is driven through every path that creates a family (connections, sends, a block, a push,
/// an admin call), scraped, and `scripts/ops-queries check` reads every query against it.
@Suite struct OperatorKitTests {
    @Test func everyPanelAndAlertNamesWhatTheGatewayExposes() async throws {
        let pushFile = NSTemporaryDirectory() + "push-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: pushFile) }
        let gateway = try await TestGateway.chat { _, chat in
            chat.push.sink = .file
            chat.push.file = pushFile
        }
        try await gateway.createUsers(["kit-offline"])
        let alice = try await gateway.connect("kit-alice")
        let carol = try await gateway.connect("kit-carol")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group",
                                                                   "userIds": ["kit-carol", "kit-offline"]])["id"] as? String)
        _ = try carol.ok("user.block", ["userIds": ["kit-alice"]])
        let before = try await gateway.http("GET", "/metrics").body
        try alice.send(channel, "withheld from carol, pushed to the offline member")

        let root = repositoryRoot
        let scrapeFile = NSTemporaryDirectory() + "scrape-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: scrapeFile) }
        var scrape = ""
        for _ in 0..<100 {
            scrape = try await gateway.http("GET", "/metrics").body
            if scrape.contains("chat_push_events_total{") { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        try scrape.write(toFile: scrapeFile, atomically: true, encoding: .utf8)
        let script = root.appendingPathComponent("scripts/ops-queries").path
        let checked = try await offThePool { try ChildProcess.run("/usr/bin/env", ["python3", script, "check", scrapeFile], timeoutSeconds: 60) }
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("0 problems"), "\(checked.output)")

        // Every panel and alert evaluates over two scrapes, and the panels show the send.
        let beforeFile = NSTemporaryDirectory() + "scrape-before-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: beforeFile) }
        try before.write(toFile: beforeFile, atomically: true, encoding: .utf8)
        let evaluated = try await offThePool {
            try ChildProcess.run("/usr/bin/env", ["python3", script, "eval", beforeFile, scrapeFile, "--seconds", "1"], timeoutSeconds: 60)
        }
        #expect(evaluated.status == 0 && evaluated.output.contains(", 0 not evaluated"), "\(evaluated.output)")
        #expect(evaluated.output.contains("panel 'Messages stored per second': total: 1\n"), "\(evaluated.output)")
        #expect(evaluated.output.contains("panel 'Deliveries per second': total: 1\n"), "\(evaluated.output)")
        #expect(evaluated.output.contains("panel 'Push events by outcome': outcome=written,sink=file: 1\n"), "\(evaluated.output)")
        #expect(evaluated.output.contains("alert ChatGatewayPushDropped: quiet"), "\(evaluated.output)")
    }

    /// Prometheus' own checker reads the rules, and their unit tests (ops/prometheus/alerts.test.yaml)
    /// fire each alert on the series that should fire it and keep it quiet on a healthy node.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool")
                   || ProcessInfo.processInfo.environment["CHAT_TEST_REQUIRE_SERVICES"] == "1",
                   "promtool (Debian's prometheus package) is not installed"))
    func theAlertRulesPassPromtool() async throws {
        let root = repositoryRoot
        let rules = root.appendingPathComponent("ops/prometheus/alerts.yaml").path
        let tests = root.appendingPathComponent("ops/prometheus/alerts.test.yaml").path
        let checked = try await offThePool { try ChildProcess.run("/usr/bin/promtool", ["check", "rules", rules], timeoutSeconds: 60) }
        #expect(checked.status == 0 && checked.output.contains("SUCCESS: 10 rules found"), "\(checked.output)")
        let tested = try await offThePool { try ChildProcess.run("/usr/bin/promtool", ["test", "rules", tests], timeoutSeconds: 60) }
        #expect(tested.status == 0 && tested.output.contains("SUCCESS"), "\(tested.output)")
    }
}
