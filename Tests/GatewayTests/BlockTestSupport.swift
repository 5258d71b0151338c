import ChatCore
import Foundation
import Testing
@testable import Gateway

/// Shared helpers for the blocking end-to-end tests (PROTOCOL.md §5, §7, §9, §10).
enum BlockFixture {
    /// A chat gateway with the §12 blocking keys set; `push` writes a JSON Lines push file.
    static func gateway(mode: DeliveryPolicy.Mode = .standard, reveal: Bool = false, exclude: Bool = false,
                        push: Bool = false) async throws -> (gateway: TestGateway, push: PushLog?) {
        let pushPath = push ? TestGateway.temporaryDirectory() + "/push.jsonl" : nil
        let gateway = try await TestGateway.chat { _, chat in
            chat.blocking.mode = mode
            chat.blocking.revealBlockedBy = reveal
            chat.blocking.excludeFromInvitations = exclude
            if let pushPath { chat.push = GatewayConfiguration.Push(sink: .file, file: pushPath) }
        }
        return (gateway, pushPath.map(PushLog.init(path:)))
    }
}

/// The push sink's JSON Lines file. Reads race the sink's own queue, so presence is
/// polled for (bounded, 2 s) and absence is only judged after a later marker line landed.
struct PushLog {
    let path: String

    /// Every complete line written so far, parsed.
    func lines() -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let text = String(decoding: data, as: UTF8.self)
        // A line is complete once its newline was written.
        guard let lastNewline = text.lastIndex(of: "\n") else { return [] }
        return text[..<lastNewline].split(separator: "\n").map { parseJSONObject(String($0)) }
    }

    /// The lines for `user` and `messageId`.
    func lines(for user: String, messageID: String) -> [[String: Any]] {
        lines().filter { $0["userId"] as? String == user && $0["messageId"] as? String == messageID }
    }

    /// Polls up to 2 s until a line for `user` and `messageId` is written; true when it was.
    func waitForLine(user: String, messageID: String) async throws -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(2))
        while ContinuousClock.now < deadline {
            if !lines(for: user, messageID: messageID).isEmpty { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return !lines(for: user, messageID: messageID).isEmpty
    }
}

/// A 1-to-1 channel with an offline user whose push lines prove the sink caught up:
/// the sink writes in emit order on one queue, so once the marker's line is in the
/// file, every push decided before it is too.
struct PushMarker {
    let sender: RawChatClient
    let channelID: String
    let user: String
    private let log: PushLog

    /// Creates the offline marker user and `sender`'s 1-to-1 channel with it.
    static func make(_ gateway: TestGateway, sender: RawChatClient, log: PushLog, user: String = "marker") async throws -> PushMarker {
        try await gateway.createUsers([user])
        let channel = try sender.ok("channel.create", ["channelType": "group", "userIds": [user]])
        let id = try #require(channel["id"] as? String)
        return PushMarker(sender: sender, channelID: id, user: user, log: log)
    }

    private init(sender: RawChatClient, channelID: String, user: String, log: PushLog) {
        self.sender = sender
        self.channelID = channelID
        self.user = user
        self.log = log
    }

    /// Sends a marker message and waits for its push line; every earlier push is then in the file.
    func settle() async throws {
        let marker = try sender.send(channelID, "marker \(UUID().uuidString)")
        let id = try #require(marker["id"] as? String)
        let landed = try await log.waitForLine(user: user, messageID: id)
        try #require(landed, "the marker's push line never appeared")
    }
}

extension TestGateway {
    /// Advances the manual clock one second, then sends: every message gets its own
    /// `createdAt`, and no per-user rate limit is ever touched.
    @discardableResult
    func say(_ client: RawChatClient, _ channelID: String, _ text: String) throws -> [String: Any] {
        clock.advance(by: 1000)
        return try client.send(channelID, text)
    }

    /// Server-side block or unblock through the admin API, which must succeed.
    func adminBlock(_ user: String, _ targets: [String]) async throws {
        let response = try await admin("POST", "/v1/admin/users/\(user)/blocks", body: ["userIds": targets])
        guard response.status == 200 else { throw TestClientError("admin block: \(response.status) \(response.body)") }
    }
}

extension RawChatClient {
    /// Creates a group channel with `userIds` and returns its id.
    func createGroup(_ userIDs: [String], _ extra: [String: Any] = [:]) throws -> String {
        var fields = extra
        fields["channelType"] = fields["channelType"] ?? "group"
        fields["userIds"] = userIDs
        let channel = try ok("channel.create", fields)
        guard let id = channel["id"] as? String else { throw TestClientError("channel.create: no id in \(channel)") }
        return id
    }

    /// The texts of the `message.new` events received so far (after a round trip), drained.
    func receivedTexts() throws -> [String] {
        try takeEvents("message.new").compactMap { ($0["data"] as? [String: Any])?["text"] as? String }
    }

    /// The texts of the whole history of a channel as this connection sees it.
    func historyTexts(_ channelID: String) throws -> [String] {
        try fullHistory(channelID).texts
    }

    /// `results` of a user.block / user.unblock reply.
    func blockResults(_ type: String, _ userIDs: [String]) throws -> [String: String] {
        let result = try ok(type, ["userIds": userIDs])
        guard let results = result["results"] as? [String: String] else { throw TestClientError("\(type): no results in \(result)") }
        return results
    }

    /// This user's channel `channelID` as `channel.list` shows it.
    func listedChannel(_ channelID: String) throws -> [String: Any]? {
        let page = try ok("channel.list", ["limit": 100])
        return (page["channels"] as? [[String: Any]])?.first { $0["id"] as? String == channelID }
    }
}
