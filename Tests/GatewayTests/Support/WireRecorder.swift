import Foundation
import Synchronization

/// Writes samples of the chat frames the suite's test clients exchange to the JSON-lines file
/// `CHAT_TEST_WIRE_LOG` names (`scripts/test` sets it): each request the gateway answered
/// `ok` with its reply, each error reply and each event, as
/// `{"kind":"request"|"reply"|"error"|"event","name":…,"frame":…}`. `scripts/api-check
/// asyncapi` then checks docs/api/websocket.asyncapi.yaml against them: every request type
/// answered and every event sent is described, every one described was seen, and every
/// sampled frame matches its schema. The first frames of each kind and name are kept, then
/// one in 50, so the file stays small however long the suite runs.
final class WireRecorder: Sendable {
    static let shared: WireRecorder? = {
        guard let path = ProcessInfo.processInfo.environment["CHAT_TEST_WIRE_LOG"], !path.isEmpty else { return nil }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        return fd >= 0 ? WireRecorder(fd: fd) : nil
    }()

    private let fd: Int32
    private let seen = Mutex<[String: Int]>([:])

    private init(fd: Int32) {
        self.fd = fd
    }

    /// A text frame the test client sent on a chat connection: its type and the frame, kept
    /// until its reply says whether the gateway answered it.
    static func request(_ text: [UInt8]) -> (id: String, type: String, frame: [UInt8])? {
        guard shared != nil, let object = parse(text), let type = object["type"] as? String else { return nil }
        return (key(object["id"]), type, text)
    }

    /// A text frame the gateway sent; `pending` holds the requests awaiting replies, by id.
    func received(_ bytes: [UInt8], pending: inout [String: (type: String, frame: [UInt8])]) {
        guard let object = Self.parse(bytes), let type = object["type"] as? String else { return }
        switch type {
        case "event":
            if let name = object["event"] as? String { record("event", name, bytes) }
        case "ok":
            guard let request = pending.removeValue(forKey: Self.key(object["id"])) else { return }
            record("request", request.type, request.frame)
            record("reply", request.type, bytes)
        case "error":
            let code = (object["error"] as? [String: Any])?["code"] as? String ?? "?"
            pending.removeValue(forKey: Self.key(object["id"]))
            record("error", code, bytes)
        default:
            record("unknown", type, bytes)
        }
    }

    private func record(_ kind: String, _ name: String, _ frame: [UInt8]) {
        let count = seen.withLock { counts in
            counts["\(kind) \(name)", default: 0] += 1
            return counts["\(kind) \(name)", default: 0]
        }
        guard count <= 20 || count % 50 == 0 else { return }
        guard let nameJSON = try? JSONSerialization.data(withJSONObject: name, options: .fragmentsAllowed) else { return }
        var line = Array("{\"kind\":\"\(kind)\",\"name\":".utf8) + Array(nameJSON) + Array(",\"frame\":".utf8)
        line += frame
        line += Array("}\n".utf8)
        // One write per line: O_APPEND keeps concurrent lines whole.
        line.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
    }

    private static func parse(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    private static func key(_ id: Any?) -> String {
        switch id {
        case let number as NSNumber: return "n\(number)"
        case let text as String: return "s\(text)"
        default: return "null"
        }
    }
}
