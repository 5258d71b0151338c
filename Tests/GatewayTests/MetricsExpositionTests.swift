import Foundation
import Testing
@testable import Gateway

/// `/metrics` for the tools that read it: every family has a `# HELP` line before its
/// `# TYPE` line, and the process series and the build are there.
@Suite struct MetricsExpositionTests {
    @Test func everyFamilyHasHelpAndTheProcessSeriesAreThere() async throws {
        let gateway = try await TestGateway.chat()
        // Traffic that makes the lazily created families appear too.
        let alice = try await gateway.connect("alice")
        _ = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        try alice.send(channel, "hello")
        _ = try await gateway.admin("GET", "/v1/admin/users/alice")
        let body = try await gateway.http("GET", "/metrics").body
        let lines = body.split(separator: "\n").map(String.init)

        var families: [String] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
            let name = String(line.dropFirst(7).prefix { $0 != " " })
            families.append(name)
            #expect(index > 0 && lines[index - 1].hasPrefix("# HELP \(name) "), "no # HELP before \(line)")
        }
        #expect(families.count == Set(families).count, "a family is listed twice")
        for family in ["chat_connections", "chat_admin_requests_total", "chat_build_info", "process_start_time_seconds",
                       "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds"] {
            #expect(families.contains(family), "\(family) missing")
        }
        func value(_ prefix: String) -> Double? {
            lines.first { $0.hasPrefix(prefix + " ") || $0.hasPrefix(prefix + "{") }?.split(separator: " ").last.flatMap { Double($0) }
        }
        let now = Date().timeIntervalSince1970
        #expect((now - 3_600...now).contains(value("process_start_time_seconds") ?? 0))
        #expect((value("process_open_fds") ?? 0) >= 3)
        #expect((value("process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((value("process_max_fds") ?? 0) >= (value("process_open_fds") ?? .infinity))
        #expect(lines.contains("chat_build_info{version=\"\(GatewayVersion.release)\",protocol=\"1.2\"} 1"))
    }
}
