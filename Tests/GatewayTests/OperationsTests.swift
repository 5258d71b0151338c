import CSQLite
import Foundation
import ServiceTestSupport
import Logging
import EventLoop
import Testing
@testable import Gateway
#if canImport(Glibc)
import Glibc
#endif

/// What the ops team relies on: `/metrics`, the JSON log stream and the drain on SIGTERM.
@Suite("Operations")
struct OperationsTests {
    // MARK: metrics

    /// `/metrics` as Prometheus text: every line a comment or a valid sample; samples by name+labels.
    private static func scrape(_ gateway: TestGateway) async throws -> [String: Double] {
        let response = try await gateway.http("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain") == true, "\(response.headers)")
        let sample = try NSRegularExpression(pattern:
            #"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[a-zA-Z_][a-zA-Z0-9_]*="(?:\\.|[^"\\])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:\\.|[^"\\])*")*\})?) ([-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|Inf))$"#)
        let comment = try NSRegularExpression(pattern: #"^# (?:TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (?:counter|gauge|histogram|summary|untyped)|HELP .*)$"#)
        var samples: [String: Double] = [:]
        for line in response.body.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            let range = NSRange(line.startIndex..., in: line)
            if comment.firstMatch(in: line, range: range) != nil { continue }
            guard let match = sample.firstMatch(in: line, range: range),
                  let name = Range(match.range(at: 1), in: line), let value = Range(match.range(at: 2), in: line) else {
                Issue.record("not Prometheus text: \(line)")
                continue
            }
            samples[String(line[name])] = Double(line[value])
        }
        return samples
    }

    @Test("/metrics parses as Prometheus text and its counters move with traffic")
    func metricsMove() async throws {
        let gateway = try await TestGateway.chat { _, chat in
            chat.limits.userMessagesPerSecond = 5
            chat.limits.userMessageBurst = 5
        }
        let before = try await Self.scrape(gateway)
        #expect(before["chat_connections{transport=\"ws\"}"] == 0)
        #expect(before["chat_messages_stored_total"] == 0)

        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        _ = try await gateway.upgrade(path: "/v1/ws?token=not-a-jwt")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        for index in 0..<3 { try alice.send(channel, "m\(index)") }
        _ = try bob.takeEvents("message.new")
        _ = try bob.ok("user.block", ["userIds": ["alice"]])
        try alice.send(channel, "to a blocker in a 1-to-1")
        try alice.send(channel, "again")
        #expect(try alice.errorCode("message.send", ["channelId": channel, "text": "sixth"]) == "ERR_RATE_LIMITED")

        var after: [String: Double] = [:]
        for _ in 0..<50 {
            after = try await Self.scrape(gateway)
            if after["chat_deliveries_suppressed_total{reason=\"blocked\"}"] == 2 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(after["chat_connections{transport=\"ws\"}"] == 2)
        #expect(after["chat_handshakes_total{outcome=\"accepted\"}"] == 2)
        #expect(after["chat_handshakes_total{outcome=\"401\"}"] == 1)
        #expect(after["chat_messages_received_total"] == 6)
        #expect(after["chat_messages_stored_total"] == 5)
        #expect(after["chat_messages_throttled_total{limit=\"user_rate\"}"] == 1)
        #expect(after["chat_deliveries_total"] == 3)
        #expect(after["chat_deliveries_suppressed_total{reason=\"blocked\"}"] == 2)
        #expect((after["chat_group_commit_batch_size_count"] ?? 0) >= 1)
        #expect((after["chat_group_commit_duration_seconds_count"] ?? 0) >= 1)
        #expect((after["chat_fanout_duration_seconds_count"] ?? 0) >= 5)
        #expect(after.keys.contains { $0.hasPrefix("chat_write_queue_bytes{loop=") })

        alice.connection.dropConnection()
        var connections = 2.0
        for _ in 0..<100 where connections != 1 {
            connections = try await Self.scrape(gateway)["chat_connections{transport=\"ws\"}"] ?? -1
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(connections == 1)
    }

    @Test("/metrics counts typing events, read marks, channel.read events and presence subscriptions")
    func featureMetricsMove() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        _ = try alice.ok("typing.start", ["channelId": channel])
        _ = try alice.ok("typing.start", ["channelId": channel])  // within 2 s: not forwarded
        try alice.send(channel, "hi")                              // ends alice's typing: one stop
        _ = try bob.ok("channel.markRead", ["channelId": channel, "seq": 1])
        _ = try bob.ok("channel.markRead", ["channelId": channel, "seq": 1])  // nothing to move: no write
        _ = try bob.ok("presence.subscribe", ["userIds": ["alice"]])
        _ = try alice.ok("presence.subscribe", ["userIds": ["bob"]])
        _ = try alice.ok("presence.unsubscribe", ["userIds": ["bob"]])
        var after: [String: Double] = [:]
        for _ in 0..<50 {
            after = try await Self.scrape(gateway)
            if after["chat_presence_subscriptions"] == 1 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(after["chat_typing_events_total{event=\"start\"}"] == 1)
        #expect(after["chat_typing_events_total{event=\"stop\"}"] == 1)
        #expect(after["chat_read_marks_total{outcome=\"stored\"}"] == 1)
        #expect(after["chat_read_events_total"] == 1)
        #expect(after["chat_presence_subscriptions"] == 1)
    }

    // MARK: logs

    /// Collects rendered JSON log lines from any thread.
    final class LogCapture: @unchecked Sendable {
        private let lock = NSLock()
        private var captured: [String] = []

        func append(_ line: String) { lock.withLock { captured.append(line) } }
        var lines: [String] { lock.withLock { captured } }
        var events: Set<String> { Set(lines.compactMap { parseJSONObject($0)["event"] as? String }) }

        func logger() -> Logger {
            Logger(label: "chat-gateway") { label in JSONLogHandler(label: label, level: .info, sink: self.append) }
        }
    }

    @Test("every event class is logged as one JSON object per line, with no token, secret or message text")
    func logEventClasses() async throws {
        let capture = LogCapture()
        let secretText = "message-text-\(UUID().uuidString)"

        // Gateway one: handshakes, blocks, the rate limit, a store error and the drain.
        let dataDirectory = TestGateway.temporaryDirectory()
        let gateway = try await TestGateway.chat(dataDirectory: dataDirectory, logger: capture.logger()) { _, chat in
            chat.limits.userMessagesPerSecond = 5
            chat.limits.userMessageBurst = 5
        }
        let aliceToken = try await gateway.token(for: "alice")
        let alice = try await gateway.connect(token: aliceToken)
        // bob's send during the lock waits out the writer's 5 s busy timeout: read longer than that.
        let bob = try await gateway.connect("bob", timeoutSeconds: 20)
        let expired = try await gateway.token(for: "alice", ttlSeconds: -10)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(expired)").response.status == 401)
        let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
        _ = try alice.ok("user.block", ["userIds": ["bob"]])
        _ = try alice.ok("user.unblock", ["userIds": ["bob"]])
        for index in 0..<5 { try alice.send(channel, "\(secretText)-\(index)") }
        #expect(try alice.errorCode("message.send", ["channelId": channel, "text": secretText]) == "ERR_RATE_LIMITED")

        // A store error: another connection holds the write lock past the writer's busy timeout.
        var database: OpaquePointer?
        #expect(sqlite3_open(dataDirectory + "/chat.sqlite", &database) == SQLITE_OK)
        #expect(sqlite3_exec(database, "BEGIN EXCLUSIVE", nil, nil, nil) == SQLITE_OK)
        gateway.clock.advance(by: 10_000)
        let failed = try await offThePool { try bob.errorCode("message.send", ["channelId": channel, "text": secretText]) }
        sqlite3_exec(database, "ROLLBACK", nil, nil, nil)
        sqlite3_close(database)
        #expect(failed == "ERR_INTERNAL")
        bob.connection.dropConnection()

        // Gateway two: a slow consumer.
        let second = try await TestGateway.chat(logger: capture.logger()) { transport, _ in
            transport.outputBound = OutputBound(maxUnsentBytes: 64 * 1024, windowTicks: 1)
        }
        let sender = try await second.connect("sender")
        let stalled = try await second.connect("stalled", receiveBufferBytes: 4096)
        let room = try #require(try sender.ok("channel.create", ["channelType": "group", "userIds": ["stalled"]])["id"] as? String)
        let big = secretText + String(repeating: "x", count: 4000)
        for _ in 0..<1500 where !capture.lines.contains(where: { $0.contains("\"connection.slow_consumer\"") }) {
            try sender.send(room, big)
        }

        withExtendedLifetime(stalled) {}
        let drained = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
            gateway.server.drain(timeoutSeconds: 5) { continuation.resume(returning: $0) }
        }
        #expect(drained == 0)

        let wanted: Set<String> = ["gateway.start", "connection.open", "connection.close", "handshake.rejected",
                                   "user.block", "user.unblock", "message.rate_limited", "connection.slow_consumer",
                                   "store.error", "gateway.drain"]
        #expect(wanted.isSubset(of: capture.events), "missing \(wanted.subtracting(capture.events).sorted())")
        let lines = capture.lines
        #expect(lines.allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") && !$0.contains("\n") })
        for line in lines {
            let object = parseJSONObject(line)
            #expect(object["ts"] != nil && object["level"] is String && object["event"] is String, "\(line)")
        }
        let close = lines.map(parseJSONObject).first { $0["event"] as? String == "connection.close" && $0["user"] as? String == "bob" }
        #expect(close?["conn"] != nil && close?["code"] != nil, "connection.close carries conn and code")
        let forbidden = [aliceToken, expired, secretText, gateway.chat.auth.jwtSecret, gateway.chat.admin.apiKey]
        for needle in forbidden {
            #expect(!lines.contains { $0.contains(needle) }, "a log line contains \(needle.prefix(12))…")
        }
        #expect(!lines.contains { $0.contains("eyJ") }, "a log line contains something like a JWT")
    }

    // MARK: drain

    @Test("quiesce after a drain that timed out: TLS clients still connected are dropped, every loop stops, no connection is left")
    func quiesceStopsEveryLoop() async throws {
        let gateway = try await TestGateway.chat(tls: true)
        // Clients that never answer the close frame keep the drain from finishing.
        var clients: [RawChatClient] = []
        for n in 0..<8 { clients.append(try await gateway.connect("q\(n)")) }
        let remaining = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
            gateway.server.drain(timeoutSeconds: 0.3) { continuation.resume(returning: $0) }
        }
        #expect(remaining > 0)
        gateway.server.quiesce()
        #expect(gateway.server.isQuiesced)
        withExtendedLifetime(clients) {}
    }

    @Test("SIGTERM during traffic: every client sees close 1001, no acknowledged message is lost, exit 0 within the drain timeout")
    func sigtermDrains() async throws {
        let root = TestGateway.temporaryDirectory()
        let dataDirectory = root + "/data"
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let gateway = try DurabilityTests.GatewayProcess(dataDirectory: dataDirectory, workingDirectory: root,
                                                         environment: ["CHAT_GATEWAY_LOG_LEVEL": "info",
                                                                       "CHAT_GATEWAY_SHUTDOWN_DRAINSECONDS": "5",
                                                                       // `late` idles until the signal: on a loaded
                                                                       // machine that may pass the default 10 s.
                                                                       "CHAT_GATEWAY_LIMITS_HANDSHAKETIMEOUTSECONDS": "60"])
        let users = (0..<6).map { "drain\($0)" }
        for user in users { _ = try gateway.admin("POST", "/v1/admin/users", body: ["id": user]) }
        let channel = try gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "name": "drain", "userIds": users])
        let channelID = try #require(channel.json["id"] as? String)
        let tokens = try users.map { try gateway.token(for: $0) }
        let port = gateway.port
        // A connection accepted before the signal whose upgrade request is completed after it:
        // its request line is in before the signal, so the drain finds a request arriving
        // (answered when complete), not an idle connection (closed).
        let late = try TestClient(port: gateway.port)
        try late.write("GET /v1/ws?token=\(tokens[0]) HTTP/1.1\r\nHost: 127.0.0.1\r\n")

        let acks = DurabilityTests.Acks()
        let closes = CloseCodes()
        let started = DispatchGroup()
        let done = DispatchGroup()
        for (index, token) in tokens.enumerated() {
            done.enter()
            started.enter()
            Thread {
                defer { done.leave() }
                do {
                    let client = try RawChatClient(port: port, tls: false, path: "/v1/ws?token=\(token)", timeoutSeconds: 20)
                    var n = 0
                    var startedOnce = false
                    while true {
                        let text = "d\(index)-\(n)"
                        _ = try client.fire("message.send", ["channelId": channelID, "text": text])
                        if !startedOnce { startedOnce = true; started.leave() }
                        // Read until this send's reply or the close.
                        reading: while true {
                            switch try client.connection.nextEvent() {
                            case .text(let bytes):
                                let frame = parseJSONObject(String(decoding: bytes, as: UTF8.self))
                                if frame["type"] as? String == "ok" { acks.add(index, text); break reading }
                                if frame["type"] as? String == "error" { break reading }
                            case .closed(let code, _):
                                closes.add(code?.rawValue)
                                return
                            case .failed(let error):
                                acks.fail("client \(index): \(error)")
                                return
                            default:
                                continue
                            }
                        }
                        n += 1
                    }
                } catch {
                    acks.fail("client \(index): \(error)")
                }
            }.start()
        }
        #expect(try await offThePool { started.wait(timeout: .now() + 20) } == .success)
        try await Task.sleep(for: .milliseconds(500))

        let signalled = Date()
        gateway.process.signal(SIGTERM)
        try await Task.sleep(for: .milliseconds(200))
        let lateClient = UnsafeTransfer(value: late)
        let refused = try await offThePool { () -> TestClient.Response in
            try lateClient.value.write("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                       + "Sec-WebSocket-Version: 13\r\n\r\n")
            return try lateClient.value.readResponse()
        }
        #expect(refused.status == 503, "an upgrade during the drain: \(refused.status)")
        late.dropConnection()
        #expect(try await offThePool { done.wait(timeout: .now() + 20) } == .success, "clients did not see the close")
        let process = UnsafeTransfer(value: gateway.process)
        let exited = try await offThePool { () -> Bool in
            let deadline = Date().addingTimeInterval(15)
            while process.value.isRunning && Date() < deadline { usleep(20_000) }
            return !process.value.isRunning
        }
        #expect(exited)
        // The gateway's own clock, from its drain line to its exit line: what this test's
        // threads add on a loaded machine is not the gateway's drain. The wall clock seen from
        // here only bounds a hang.
        let wallSeconds = Date().timeIntervalSince(signalled)
        #expect(wallSeconds < 5 + 5, "the gateway exited (\(wallSeconds) s after the signal)")
        let exitLine = gateway.logLines(event: "gateway.exit").first
        let drainLine = gateway.logLines(event: "gateway.drain").first
        if let drainLine, let exitLine, let drainTime = logTime(drainLine), let exitTime = logTime(exitLine) {
            let drainSeconds = exitTime.timeIntervalSince(drainTime)
            #expect(drainSeconds < 5 + 0.5, "exit within the drain timeout (took \(drainSeconds) s, \(exitLine))")
        } else {
            Issue.record("no gateway.drain or gateway.exit line with a timestamp")
        }
        #expect(gateway.process.terminationStatus == 0)
        #expect(acks.errors.isEmpty, "\(acks.errors.prefix(3))")
        #expect(closes.all == Array(repeating: 1001, count: users.count), "\(closes.all)")
        let log = gateway.log()
        #expect(log.contains("\"gateway.drain\"") && log.contains("\"gateway.exit\""))

        let acknowledged = acks.all.values.flatMap { $0 }
        #expect(acknowledged.count > users.count, "traffic was flowing")
        let restarted = try DurabilityTests.GatewayProcess(dataDirectory: dataDirectory, workingDirectory: root)
        let reader = try RawChatClient(port: restarted.port, tls: false,
                                    path: "/v1/ws?token=\(try restarted.token(for: users[0]))", timeoutSeconds: 20)
        let stored = Set(try reader.fullHistory(channelID).texts)
        #expect(Set(acknowledged).isSubset(of: stored), "\(Set(acknowledged).subtracting(stored).count) acknowledged messages lost")
    }

    /// The `ts` of a JSON log line (`2025-01-02T03:04:05.678Z`).
    private func logTime(_ line: [String: Any]) -> Date? {
        guard let text = line["ts"] as? String else { return nil }
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return format.date(from: text)
    }

    final class CloseCodes: @unchecked Sendable {
        private let lock = NSLock()
        private var codes: [UInt16] = []
        func add(_ code: UInt16?) { lock.withLock { codes.append(code ?? 0) } }
        var all: [UInt16] { lock.withLock { codes } }
    }
}
