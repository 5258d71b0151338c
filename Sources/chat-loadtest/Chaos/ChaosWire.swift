import Foundation

/// The frames a chaos run exchanges with the gateway (PROTOCOL.md §2, §4): the
/// requests it writes as JSON text, and the replies it decodes. Events are recognised
/// by their first bytes; a single-node run skips them (it checks the store), a
/// cluster run decodes `message.new` and `session.resync` to check live delivery.
enum ChaosWire {
    /// `message.send` with a `clientMessageId`, so that sending it again after a
    /// kill returns the stored message or stores it once (§4).
    static func send(id: Int, channelID: String, text: String, clientMessageID: String) -> [UInt8] {
        Array(("{\"id\":\(id),\"type\":\"message.send\",\"channelId\":\(JSONText.quote(channelID))," +
               "\"text\":\(JSONText.quote(text)),\"clientMessageId\":\(JSONText.quote(clientMessageID))}").utf8)
    }

    /// The newest message of a channel: `message.history` with neither `beforeSeq`
    /// nor `afterSeq` pages back from the end.
    static func lastMessage(id: Int, channelID: String) -> [UInt8] {
        Array("{\"id\":\(id),\"type\":\"message.history\",\"channelId\":\(JSONText.quote(channelID)),\"limit\":1}".utf8)
    }

    /// One forward page of history (docs/PROTOCOL.md "History paging"): the first
    /// from `afterSeq` 0, each following one from the `next` cursor of the last.
    static func historyPage(id: Int, channelID: String, cursor: String?) -> [UInt8] {
        let from = cursor.map { "\"cursor\":\(JSONText.quote($0))" } ?? "\"afterSeq\":0"
        return Array("{\"id\":\(id),\"type\":\"message.history\",\"channelId\":\(JSONText.quote(channelID)),\(from),\"limit\":100}".utf8)
    }

    /// A catch-up read: the first `limit` messages after `afterSeq` (§4).
    static func historyAfter(id: Int, channelID: String, afterSeq: Int64) -> [UInt8] {
        Array(("{\"id\":\(id),\"type\":\"message.history\",\"channelId\":\(JSONText.quote(channelID))," +
               "\"afterSeq\":\(afterSeq),\"limit\":\(catchUpPage)}").utf8)
    }

    /// Messages per catch-up read; a full page means there may be more.
    static let catchUpPage = 100

    /// The events a delivery-tracking client reads: `message.new` (its channel and seq)
    /// and `session.resync` (its channels); other fields are ignored.
    struct Event: Decodable {
        var event: String
        var data: EventData?

        struct EventData: Decodable {
            var channelId: String?
            var seq: Int64?
            var channelIds: [String]?
        }
    }

    private static let eventPrefix = Array("{\"type\":\"event\"".utf8)

    /// Whether a server frame is an event (`{"type":"event",…}`, the gateway's key order) rather than a reply.
    static func isEvent(_ payload: [UInt8]) -> Bool {
        payload.starts(with: eventPrefix)
    }

    /// A `Message` as the gateway stores and returns it (§3), with the fields the run checks.
    struct StoredMessage: Decodable, Sendable {
        var id: String
        var channelId: String
        var seq: Int64
        var senderId: String
        var text: String
        var clientMessageId: String?
    }

    /// `{"id","type":"ok","result"}` or `{"id","type":"error","error"}`. `result` is a
    /// `Message` for `message.send` and a page for `message.history`: both shapes are
    /// read into one optional-field struct, and the request the id names says which applies.
    struct Reply: Decodable {
        var id: Int?
        var type: String
        var result: Result?
        var error: Failure?

        struct Result: Decodable {
            var id: String?
            var channelId: String?
            var seq: Int64?
            var senderId: String?
            var text: String?
            var clientMessageId: String?
            var messages: [StoredMessage]?
            var next: String?

            /// The `Message` of a `message.send` reply, when all its fields are there.
            var message: StoredMessage? {
                guard let id, let channelId, let seq, let senderId, let text else { return nil }
                return StoredMessage(id: id, channelId: channelId, seq: seq, senderId: senderId, text: text,
                                     clientMessageId: clientMessageId)
            }
        }

        struct Failure: Decodable {
            var code: String
            var message: String?
        }
    }
}
