import ChatCore
import Foundation
import Logging
import Synchronization
import Testing
@testable import Gateway
#if canImport(Glibc)
import Glibc
#endif

/// The push sinks themselves: the file keeps message text private, the webhook backs off.
@Suite("Push sinks")
struct PushSinkTests {
    static func event(_ n: Int) -> PushEvent {
        PushEvent(userID: "alice", message: Message(id: "m\(n)", channelID: "c", seq: Int64(n), senderID: "bob",
                                                     text: "secret \(n)", createdAt: 0))
    }

    @Test("the push file is created 0600, and an existing wider file is narrowed to 0600")
    func filePermissions() throws {
        let directory = TestGateway.temporaryDirectory()
        let fresh = directory + "/push.jsonl"
        let sink = try JSONLinesPushSink(path: fresh)
        sink.emit([Self.event(1)])
        sink.flush()
        var info = stat()
        #expect(stat(fresh, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)

        let existing = directory + "/old.jsonl"
        #expect(FileManager.default.createFile(atPath: existing, contents: Data(), attributes: [.posixPermissions: 0o644]))
        _ = try JSONLinesPushSink(path: existing)
        #expect(stat(existing, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test("a failing webhook is retried with its backoff, however many events keep coming; nothing is lost once it recovers")
    func webhookBacksOff() async throws {
        let server = try WebhookStub()
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/push"))
        let sink = WebhookPushSink(url: url,
                                   logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        // Two seconds of one event every 50 ms against a webhook answering 500.
        let started = ContinuousClock.now
        for n in 0..<40 {
            sink.emit([Self.event(n)])
            try await Task.sleep(for: .milliseconds(50))
        }
        let failedPosts = server.posts
        let elapsed = (ContinuousClock.now - started) / .seconds(1)
        // Backoff 0.5 s, 1 s, 2 s, 4 s…: posts at 0, 0.5, 1.5, 3.5, 7.5… s, not one per event
        // (a loaded machine stretches the two seconds, so the bound follows the clock).
        var allowed = 1
        var at = 0.5
        var delay = 0.5
        while at <= elapsed + 0.5 {
            allowed += 1
            delay *= 2
            at += delay
        }
        #expect(failedPosts >= 2 && failedPosts <= allowed, "\(failedPosts) posts in \(elapsed) s while failing")
        server.succeed()
        // The pending retry comes within the current backoff (at most 30 s).
        for _ in 0..<400 where server.deliveredIDs.count < 40 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(server.deliveredIDs.sorted() == (0..<40).map { "m\($0)" }.sorted())
    }
}

/// A one-thread HTTP server on 127.0.0.1: answers 500 until `succeed()`, then 200, and
/// records the message ids of the batches it accepted.
final class WebhookStub: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let state = Mutex<(posts: Int, succeeding: Bool, delivered: [String])>((0, false, []))

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw TestClientError("webhook stub: bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    var posts: Int { state.withLock { $0.posts } }
    var deliveredIDs: [String] { state.withLock { $0.delivered } }
    func succeed() { state.withLock { $0.succeeding = true } }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 { return }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            var body: [UInt8]?
            while body == nil {
                let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                received += buffer[..<n]
                let text = String(decoding: received, as: UTF8.self)
                guard let end = text.range(of: "\r\n\r\n") else { continue }
                let head = text[..<end.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                let start = text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound)
                if received.count >= start + length { body = Array(received[start..<(start + length)]) }
            }
            let succeeding = state.withLock { state -> Bool in
                state.posts += 1
                return state.succeeding
            }
            if succeeding, let body, let events = try? JSONSerialization.jsonObject(with: Data(body)) as? [[String: Any]] {
                state.withLock { $0.delivered += events.compactMap { $0["messageId"] as? String } }
            }
            let answer = succeeding ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                : "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = answer.withCString { write(client, $0, strlen($0)) }
            close(client)
        }
    }
}
