import Foundation
import Testing
@testable import Gateway

/// What one participant's requests in an open channel make the gateway send to the others
/// is bounded per request: a join or leave reaches only the joiner's own connections, and
/// no channel object lists the participants to a participant (`memberCount` says how many).
@Suite("Open channel fan-out")
struct OpenChannelFanOutTests {
    @Test("toggling join/leave 20 times: the other participants get nothing; the toggler's other device gets each join")
    func joinAndLeaveReachOnlyTheToggler() async throws {
        let gateway = try await TestGateway.chat()
        let users = (0..<30).map { "p\($0)" }
        try await gateway.createUsers(users + ["mallory"])
        let created = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "open", "id": "c_square", "userIds": users])
        #expect(created.status == 200, "\(created.body)")
        #expect((created.json["members"] as? [String])?.count == 30, "the backend sees every participant")
        #expect(created.json["memberCount"] as? Int == 30)
        let watcher = try await gateway.connect("p0")
        let speaker = try await gateway.connect("p1")
        let mallory = try await gateway.connect("mallory")
        let malloryOther = try await gateway.connect("mallory", query: "&device=other")
        for _ in 0..<20 {
            let joined = try mallory.ok("channel.join", ["channelId": "c_square"])
            #expect(joined["members"] as? [String] == ["mallory"] && joined["memberCount"] as? Int == 31)
            _ = try mallory.ok("channel.leave", ["channelId": "c_square"])
        }
        // A message after them all: what reached p0 before it is all the toggling sent.
        _ = try speaker.send("c_square", "marker")
        _ = try watcher.nextEvent("message.new")
        #expect(watcher.takeBufferedEvents("channel.updated").isEmpty, "a participant heard another's join or leave")
        _ = try malloryOther.ok("me")
        #expect(malloryOther.takeBufferedEvents("channel.updated").count == 20)
        // A participant's view lists only itself; someone outside sees none.
        let seen = try watcher.ok("channel.get", ["channelId": "c_square"])
        #expect(seen["members"] as? [String] == ["p0"] && seen["memberCount"] as? Int == 30)
        _ = try mallory.ok("channel.join", ["channelId": "c_square"])
        _ = try mallory.ok("channel.leave", ["channelId": "c_square"])
        // A rename still reaches every participant, each with its own small view.
        let renamed = try await gateway.admin("POST", "/v1/admin/channels/c_square", body: ["name": "Town square"])
        #expect(renamed.status == 200, "\(renamed.body)")
        let event = try #require(try watcher.nextEvent("channel.updated")["data"] as? [String: Any])
        #expect(event["name"] as? String == "Town square" && event["members"] as? [String] == ["p0"])
    }
}
