import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// docs/api/admin.openapi.yaml describes the admin API the gateway serves: `scripts/api-check
/// openapi` validates the document and calls every operation it describes on a live gateway,
/// checking each answer's status and body against it (a renamed route, field or error fails).
@Suite struct AdminAPIDescriptionTests {
    @Test func everyDescribedOperationAnswersAsDescribed() async throws {
        let gateway = try await TestGateway.chat()
        // The fixtures the script's cases name (scripts/api-check, FIXTURES).
        try await gateway.createUsers(["api-alice", "api-bob"])
        let room = try await gateway.admin("POST", "/v1/admin/channels",
                                           body: ["type": "group", "id": "api-room", "userIds": ["api-alice", "api-bob"]])
        #expect(room.status == 200, "\(room.body)")
        let alice = try await gateway.connect("api-alice")
        let bob = try await gateway.connect("api-bob")
        _ = try await offThePool { try alice.ok("message.send", ["channelId": "api-room", "text": "flag me"]) }
        _ = try await offThePool { try bob.ok("message.flag", ["channelId": "api-room", "seq": 1, "reason": "spam"]) }

        let root = repositoryRoot
        let script = root.appendingPathComponent("scripts/api-check").path
        let arguments = ["python3", script, "openapi", "--base", "http://127.0.0.1:\(gateway.port)",
                         "--admin-key", gateway.chat.admin.apiKey]
        let checked = try await offThePool { try ChildProcess.run("/usr/bin/env", arguments, timeoutSeconds: 120) }
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains(" calls, 0 problems"), "\(checked.output)")
    }
}
