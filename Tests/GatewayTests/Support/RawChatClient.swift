import Foundation
import WebSocket

/// A test chat client speaking the wire protocol as raw JSON over `TestClient`: numbered requests, replies matched by id,
/// events kept in arrival order. Every wait is bounded by the socket timeout.
final class RawChatClient {
    let connection: TestClient
    private var nextID = 1
    private(set) var events: [[String: Any]] = []

    init(port: Int, tls: Bool, path: String, timeoutSeconds: Int = 5, receiveBufferBytes: Int32? = nil,
         deflate: Bool = false) throws {
        connection = try TestClient(port: port, tls: tls, timeoutSeconds: timeoutSeconds,
                                    receiveBufferBytes: receiveBufferBytes)
        let response = try connection.upgrade(path: path, deflate: deflate)
        guard response.status == 101 else {
            throw TestClientError("upgrade failed: \(response.status) \(response.body)")
        }
    }

    /// Sends `{"id":N,"type":type,…fields}` and returns the reply (ok or error).
    @discardableResult
    func request(_ type: String, _ fields: [String: Any] = [:]) throws -> [String: Any] {
        try reply(to: fire(type, fields))
    }

    /// Sends a request without waiting; returns its id (collect with `replies(count:)`).
    func fire(_ type: String, _ fields: [String: Any] = [:]) throws -> Int {
        let id = nextID
        nextID += 1
        var object = fields
        object["id"] = id
        object["type"] = type
        let data = try JSONSerialization.data(withJSONObject: object)
        try connection.sendText(String(decoding: data, as: UTF8.self))
        return id
    }

    /// The next `count` replies, by id (events are kept).
    func replies(count: Int) throws -> [Int: [String: Any]] {
        var replies: [Int: [String: Any]] = [:]
        while replies.count < count {
            let frame = try nextFrame()
            if frame["type"] as? String == "event" {
                events.append(frame)
            } else if let id = frame["id"] as? Int {
                replies[id] = frame
            }
        }
        return replies
    }

    /// The next `count` replies in the order they arrived (events are kept).
    func repliesInArrivalOrder(count: Int) throws -> [[String: Any]] {
        var replies: [[String: Any]] = []
        while replies.count < count {
            let frame = try nextFrame()
            if frame["type"] as? String == "event" { events.append(frame) } else { replies.append(frame) }
        }
        return replies
    }

    /// Sends raw text and returns the next reply, whatever its id.
    func sendRaw(_ text: String) throws -> [String: Any] {
        try connection.sendText(text)
        while true {
            let frame = try nextFrame()
            if frame["type"] as? String == "event" { events.append(frame); continue }
            return frame
        }
    }

    func reply(to id: Int) throws -> [String: Any] {
        while true {
            let frame = try nextFrame(awaiting: "the reply to request \(id)")
            if frame["type"] as? String == "event" {
                events.append(frame)
                continue
            }
            if frame["id"] as? Int == id { return frame }
        }
    }

    /// The `result` of an ok reply, or a thrown error naming the code.
    func ok(_ type: String, _ fields: [String: Any] = [:]) throws -> [String: Any] {
        let reply = try request(type, fields)
        guard reply["type"] as? String == "ok", let result = reply["result"] as? [String: Any] else {
            throw TestClientError("\(type) failed: \(reply)")
        }
        return result
    }

    /// The error code of a reply that must fail.
    func errorCode(_ type: String, _ fields: [String: Any] = [:]) throws -> String? {
        let reply = try request(type, fields)
        return (reply["error"] as? [String: Any])?["code"] as? String
    }

    /// The next event named `name` (events that arrived earlier are searched first).
    func nextEvent(_ name: String) throws -> [String: Any] {
        if let index = events.firstIndex(where: { $0["event"] as? String == name }) {
            return events.remove(at: index)
        }
        while true {
            let frame = try nextFrame(awaiting: "event \(name)")
            if frame["type"] as? String == "event" {
                if frame["event"] as? String == name { return frame }
                events.append(frame)
            }
        }
    }

    /// Fails (throws) unless no event named `name` arrives before a round trip completes.
    func expectNoEvent(_ name: String) throws -> Bool {
        _ = try request("me")
        return !events.contains { $0["event"] as? String == name }
    }

    /// Keeps an event read outside `nextFrame` (raw helpers).
    func appendEvent(_ event: [String: Any]) { events.append(event) }

    /// Removes and returns the buffered events named `name`.
    func takeBufferedEvents(_ name: String) -> [[String: Any]] {
        let taken = events.filter { $0["event"] as? String == name }
        events.removeAll { $0["event"] as? String == name }
        return taken
    }

    /// `awaiting` names what the caller waits for in the error a timeout throws.
    private func nextFrame(awaiting: String? = nil) throws -> [String: Any] {
        let text: String
        do {
            text = try connection.nextText()
        } catch let error as TestClientError where awaiting != nil {
            let held = events.compactMap { $0["event"] as? String }
            throw TestClientError("\(error.description) awaiting \(awaiting ?? "") (events held: \(held))")
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw TestClientError("not a JSON object: \(text)")
        }
        return object
    }
}
