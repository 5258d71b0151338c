import Foundation
import Testing
@testable import Gateway

/// Shared helpers for the message lifecycle's end-to-end tests (PROTOCOL.md §15).
extension RawChatClient {
    /// The `data` of the next event named `name`.
    func eventData(_ name: String) throws -> [String: Any] {
        try nextEvent(name)["data"] as? [String: Any] ?? [:]
    }

    /// `reactions` of a Message as this connection was shown it.
    static func reactions(_ message: [String: Any]?) -> [String: Int] {
        message?["reactions"] as? [String: Int] ?? [:]
    }

    /// The message of `seq` in this connection's history of the channel (nil: not shown).
    func historyMessage(_ channelID: String, seq: Int) throws -> [String: Any]? {
        try fullHistory(channelID).first { $0["seq"] as? Int == seq }
    }

    /// Every message `message.changes` gives after `afterVersion`, following `next`; and the
    /// version the last page said the channel is at.
    func allChanges(_ channelID: String, after afterVersion: Int = 0, limit: Int = 100) throws -> (messages: [[String: Any]], version: Int) {
        var messages: [[String: Any]] = []
        var after = afterVersion
        for _ in 0..<1000 {
            let page = try ok("message.changes", ["channelId": channelID, "afterVersion": after, "limit": limit])
            messages += page["messages"] as? [[String: Any]] ?? []
            guard let next = page["next"] as? Int else { return (messages, page["version"] as? Int ?? -1) }
            after = next
        }
        throw TestClientError("message.changes never ended")
    }
}
