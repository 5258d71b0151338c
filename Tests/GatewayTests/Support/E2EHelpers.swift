import Foundation
import ServiceTestSupport
import WebSocket
@testable import Gateway

/// An HTTP answer parsed as JSON.
struct HTTPJSON {
    var status: Int
    var headers: [String: String]
    var body: String
    var json: [String: Any]

    /// `error.code` of a `{"error":{"code","message"}}` body.
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }

    /// True when the body is exactly `{"error":{"code":String,"message":String}}`.
    var isErrorShape: Bool {
        guard Set(json.keys) == ["error"], let error = json["error"] as? [String: Any] else { return false }
        return error["code"] is String && error["message"] is String
    }
}

/// The repository's root folder (scripts/, docs/, ops/), from this file's place in it.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A JSON value as sorted-key JSON text, for comparing parsed objects ("<none>" when not an object/array).
func canonicalJSON(_ value: Any?) -> String {
    guard let value, JSONSerialization.isValidJSONObject(value),
          let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) else { return "<none>" }
    return String(decoding: data, as: UTF8.self)
}

func parseJSONObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}

/// One raw HTTP/1.1 request (JSON body with Content-Length) to 127.0.0.1:`port` and its parsed answer.
func httpRequest(port: Int, tls: Bool = false, _ method: String, _ path: String, body: Any? = nil,
                 headers: [String] = []) throws -> HTTPJSON {
    let client = try TestClient(port: port, tls: tls)
    var payload = Data()
    if let body { payload = try JSONSerialization.data(withJSONObject: body) }
    var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for line in headers { request += line + "\r\n" }
    if body != nil { request += "Content-Type: application/json\r\n" }
    request += "Content-Length: \(payload.count)\r\n\r\n"
    try client.write(Array(request.utf8) + Array(payload))
    let response = try client.readResponse()
    return HTTPJSON(status: response.status, headers: response.headers, body: response.body,
                    json: parseJSONObject(response.body))
}

extension TestGateway {
    /// One raw HTTP request (Content-Length body) and its parsed answer.
    func http(_ method: String, _ path: String, body: Any? = nil, headers: [String] = []) async throws -> HTTPJSON {
        let (port, tls) = (self.port, self.tls)
        let bodyBox = UnsafeTransfer(value: body)
        return try await offThePool { try httpRequest(port: port, tls: tls, method, path, body: bodyBox.value, headers: headers) }
    }

    /// An admin API call with this gateway's key (or `key`).
    func admin(_ method: String, _ path: String, body: Any? = nil, key: String? = nil) async throws -> HTTPJSON {
        try await http(method, path, body: body, headers: ["Authorization: Bearer \(key ?? chat.admin.apiKey)"])
    }

    /// Creates users through the admin API (no connection needed).
    func createUsers(_ ids: [String], metadata: [String: [String: String]] = [:]) async throws {
        for id in ids {
            var body: [String: Any] = ["id": id, "name": "Name of \(id)"]
            if let meta = metadata[id] { body["metadata"] = meta }
            let response = try await admin("POST", "/v1/admin/users", body: body)
            guard response.status == 200 else { throw TestClientError("admin create \(id): \(response.status) \(response.body)") }
        }
    }

    /// A raw upgrade to `path` with extra header lines; the response (101 or an error).
    func upgrade(path: String, headers: [String] = []) async throws -> (client: TestClient, response: TestClient.Response) {
        let (port, tls) = (self.port, self.tls)
        let result = try await offThePool { () throws -> UnsafeTransfer<(TestClient, TestClient.Response)> in
            let client = try TestClient(port: port, tls: tls)
            let response = try client.upgrade(path: path, headers: headers)
            return UnsafeTransfer(value: (client, response))
        }
        return result.value
    }

    /// A connected chat client with an explicit token.
    func connect(token: String, query: String = "") async throws -> RawChatClient {
        let (port, tls) = (self.port, self.tls)
        return try await offThePool { try RawChatClient(port: port, tls: tls, path: "/v1/ws?token=\(token)\(query)") }
    }
}

extension RawChatClient {
    /// Sends raw text and returns the raw text of the next non-event frame.
    func rawReply(_ text: String) throws -> String {
        try connection.sendText(text)
        while true {
            let frame = try connection.nextText()
            let object = parseJSONObject(frame)
            if object["type"] as? String == "event" {
                appendEvent(object)
                continue
            }
            return frame
        }
    }

    /// Sends one message and returns the stored Message.
    @discardableResult
    func send(_ channelID: String, _ text: String, _ extra: [String: Any] = [:]) throws -> [String: Any] {
        var fields = extra
        fields["channelId"] = channelID
        fields["text"] = text
        return try ok("message.send", fields)
    }

    /// After a round trip, every event named `name` received so far (removed from the buffer).
    func takeEvents(_ name: String) throws -> [[String: Any]] {
        _ = try request("me")
        return takeBufferedEvents(name)
    }

    /// The whole history of a channel, from `afterSeq` 0 then each page's `next`.
    func fullHistory(_ channelID: String, pageSize: Int = 100) throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        var page = try ok("message.history", ["channelId": channelID, "afterSeq": 0, "limit": pageSize])
        while true {
            all += page["messages"] as? [[String: Any]] ?? []
            guard let next = page["next"] as? String else { return all }
            page = try ok("message.history", ["channelId": channelID, "cursor": next, "limit": pageSize])
        }
    }
}

extension [[String: Any]] {
    var texts: [String] { map { $0["text"] as? String ?? "?" } }
    var seqs: [Int] { map { $0["seq"] as? Int ?? -1 } }
    var ids: [String] { map { $0["id"] as? String ?? "?" } }
}

/// The keys a §3 object must carry.
enum Shapes {
    static let user: Set<String> = ["id", "name", "image", "metadata", "online", "lastSeenAt", "blockedByMe"]
    static let channel: Set<String> = ["id", "type", "name", "members", "memberCount", "distinct", "isOneToOne", "pushFromBlockedUsers",
                                       "createdAt", "lastMessage", "lastActivityAt", "lastReadSeq", "unreadCount", "version",
                                       "roles", "frozen", "slowModeSeconds", "muted"]
    static let message: Set<String> = ["id", "channelId", "seq", "senderId", "text", "data", "clientMessageId", "createdAt",
                                       "parentSeq", "replyCount", "mentionedUserIds", "reactions", "ownReactions", "editedAt",
                                       "deletedAt", "version"]

    /// Keys present (NSNull counts as present); a Channel's `bans`, shown only to those who
    /// moderate it (§16), is left out.
    static func keys(_ object: [String: Any]?) -> Set<String> { Set((object ?? [:]).keys).subtracting(["bans"]) }
}

/// Holds a chat gateway's core (its serial queue) until `end()` or until dropped: every
/// decision that needs the core waits meanwhile, as behind a slow one. The bound only keeps
/// a broken gateway from hanging the test.
final class CoreHold {
    private let release = DispatchSemaphore(value: 0)

    init(_ chat: ChatService, seconds: Int = 120) {
        let release = self.release
        chat.queue.async { _ = release.wait(timeout: .now() + .seconds(seconds)) }
    }

    func end() { release.signal() }

    deinit { release.signal() }
}
