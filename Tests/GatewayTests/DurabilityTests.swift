import CSQLite
import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway
#if canImport(Glibc)
import Glibc
#endif

/// PROTOCOL.md: an acknowledged message survives `kill -9` of the gateway.
@Suite("Durability")
struct DurabilityTests {
    /// The `chat-gateway` executable built next to the test bundle.
    static func gatewayBinary() throws -> URL {
        var candidates: [URL] = []
        let argument0 = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        candidates.append(argument0.deletingLastPathComponent().appendingPathComponent("chat-gateway"))
        let bundle = URL(fileURLWithPath: Bundle.main.bundlePath)
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("chat-gateway"))
        candidates.append(bundle.appendingPathComponent("chat-gateway"))
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw TestClientError("chat-gateway binary not found (looked at \(candidates.map(\.path))); build it with `swift build --build-tests`")
    }

    /// A `chat-gateway serve` child process with defaults plus the given data folder and port.
    final class GatewayProcess {
        let process: ChildProcess
        let port: Int
        let logPath: String

        /// `maxOpenFiles` runs it under that descriptor limit (`ulimit -n`). The child binds
        /// port 0 and its `gateway.start` line says which port it got: a port picked here and
        /// handed over could be taken meanwhile by another test's listener, which would then
        /// answer in the child's place.
        init(dataDirectory: String, workingDirectory: String, environment overrides: [String: String] = [:],
             maxOpenFiles: Int? = nil) throws {
            logPath = workingDirectory + "/gateway-\(UUID().uuidString.prefix(8)).log"
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let binary = try DurabilityTests.gatewayBinary()
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CHAT_GATEWAY_") }
            environment["CHAT_GATEWAY_SERVER_PORT"] = "0"
            environment["CHAT_GATEWAY_STORAGE_DATADIRECTORY"] = dataDirectory
            // `info` at least: the `gateway.start` line carries the port.
            environment["CHAT_GATEWAY_LOG_LEVEL"] = "info"
            // Concurrency is the point here, not throttling (§6).
            environment["CHAT_GATEWAY_LIMITS_USERMESSAGESPERSECOND"] = "100000"
            environment["CHAT_GATEWAY_LIMITS_USERMESSAGEBURST"] = "100000"
            environment["CHAT_GATEWAY_LIMITS_CONNECTIONREQUESTSPERSECOND"] = "0"
            environment.merge(overrides) { $1 }
            if let maxOpenFiles {
                // The shell sets the limit, then becomes the gateway (same pid).
                process = try ChildProcess("/bin/sh", ["-c", "ulimit -n \(maxOpenFiles) && exec \"$0\" serve", binary.path],
                                           environment: environment, workingDirectory: workingDirectory, outputPath: logPath)
            } else {
                process = try ChildProcess(binary.path, ["serve"], environment: environment,
                                           workingDirectory: workingDirectory, outputPath: logPath)
            }
            port = try Self.boundPort(process: process, logPath: logPath)
            try waitUntilHealthy()
        }

        /// The port of the child's `gateway.start` line (bounded: 30 s).
        private static func boundPort(process: ChildProcess, logPath: String) throws -> Int {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
                for line in log.split(separator: "\n") where line.contains("\"event\":\"gateway.start\"") {
                    if let port = parseJSONObject(String(line))["port"] as? Int { return port }
                }
                guard process.isRunning else {
                    throw TestClientError("chat-gateway exited with \(process.terminationStatus): \(log)")
                }
                usleep(20_000)
            }
            throw TestClientError("chat-gateway logged no gateway.start: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
        }

        /// Polls /healthz (bounded: 30 s) until the child answers.
        private func waitUntilHealthy() throws {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                guard process.isRunning else {
                    throw TestClientError("chat-gateway exited with \(process.terminationStatus): \(log())")
                }
                if let health = try? httpRequest(port: port, "GET", "/healthz"), health.status == 200 { return }
                usleep(50_000)
            }
            throw TestClientError("chat-gateway did not become healthy on port \(port): \(log())")
        }

        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// The JSON log lines whose `event` is `event`, in order.
        func logLines(event: String) -> [[String: Any]] {
            log().split(separator: "\n").compactMap { line in
                let object = parseJSONObject(String(line))
                return object["event"] as? String == event ? object : nil
            }
        }

        func admin(_ method: String, _ path: String, body: Any? = nil) throws -> HTTPJSON {
            try httpRequest(port: port, method, path, body: body,
                            headers: ["Authorization: Bearer \(GatewayConfiguration.Admin.developmentKey)"])
        }

        func token(for user: String) throws -> String {
            let response = try admin("POST", "/v1/admin/tokens", body: ["userId": user, "ttlSeconds": 3600])
            guard response.status == 200, let token = response.json["token"] as? String else {
                throw TestClientError("token for \(user): \(response.status) \(response.body)")
            }
            return token
        }

        /// SIGKILL, no drain, no flush.
        func killHard() {
            guard process.isRunning else { return }
            process.signal(SIGKILL)
            process.waitUntilExit()
        }

        deinit { killHard() }
    }

    /// Acknowledged texts per sender, filled from several threads.
    final class Acks: @unchecked Sendable {
        private let lock = NSLock()
        private var texts: [Int: [String]] = [:]
        private var failures: [String] = []

        func add(_ sender: Int, _ text: String) { lock.withLock { texts[sender, default: []].append(text) } }
        func fail(_ message: String) { lock.withLock { failures.append(message) } }
        var all: [Int: [String]] { lock.withLock { texts } }
        var errors: [String] { lock.withLock { failures } }
    }

    @Test("a user created by its first connect while the store fails is written once the store recovers (no ack waits for it)")
    func connectUpsertIsRetried() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
        _ = try await gateway.connect("alice")
        // Another connection holds the write lock well past the writer's busy timeout (5 s): the
        // first write of zed's row gives up after 7-9 s, and only a retry can store it.
        var database: OpaquePointer?
        #expect(sqlite3_open(dataDirectory + "/chat.sqlite", &database) == SQLITE_OK)
        // The gateway may be writing alice's row (in the background) at this instant: wait for it.
        sqlite3_busy_timeout(database, 10_000)
        #expect(sqlite3_exec(database, "BEGIN EXCLUSIVE", nil, nil, nil) == SQLITE_OK)
        let zed = try await gateway.connect("zed")
        #expect(try zed.ok("me")["user"] != nil, "the connect did not wait for the store")
        try await Task.sleep(for: .seconds(12))
        sqlite3_exec(database, "ROLLBACK", nil, nil, nil)
        sqlite3_close(database)
        var stored = false
        for _ in 0..<60 where !stored {
            stored = Self.userRow("zed", in: dataDirectory)
            if !stored { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(stored, "zed's row never reached the store")
    }

    /// Whether `users` holds `id`, read straight from the database file.
    static func userRow(_ id: String, in dataDirectory: String) -> Bool {
        var database: OpaquePointer?
        guard sqlite3_open_v2(dataDirectory + "/chat.sqlite", &database, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { return false }
        defer { sqlite3_close(database) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, "SELECT 1 FROM users WHERE id = '\(id)'", -1, &statement, nil) == SQLITE_OK else {
            return false
        }
        defer { sqlite3_finalize(statement) }
        return sqlite3_step(statement) == SQLITE_ROW
    }

    @Test("500 acknowledged messages from 10 concurrent senders survive kill -9, in seq order 1...500")
    func acknowledgedMessagesSurviveKill() async throws {
        let root = TestGateway.temporaryDirectory()
        let dataDirectory = root + "/data"
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let users = (0..<10).map { "durable\($0)" }
        let perSender = 50

        var first: GatewayProcess? = try GatewayProcess(dataDirectory: dataDirectory, workingDirectory: root)
        let gateway = try #require(first)
        for user in users {
            let created = try gateway.admin("POST", "/v1/admin/users", body: ["id": user, "name": user])
            try #require(created.status == 200, "\(created.body)")
        }
        let channel = try gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "name": "durable", "userIds": users])
        try #require(channel.status == 200, "\(channel.body)")
        let channelID = try #require(channel.json["id"] as? String)
        let tokens = try users.map { try gateway.token(for: $0) }
        let port = gateway.port

        let acks = Acks()
        let done = DispatchGroup()
        for (index, token) in tokens.enumerated() {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    let client = try RawChatClient(port: port, tls: false, path: "/v1/ws?token=\(token)", timeoutSeconds: 20)
                    for n in 0..<perSender {
                        let text = "s\(index)-n\(n)"
                        let reply = try client.request("message.send", ["channelId": channelID, "text": text])
                        guard reply["type"] as? String == "ok" else {
                            acks.fail("\(text): \(reply)")
                            return
                        }
                        acks.add(index, text)
                    }
                } catch {
                    acks.fail("sender \(index): \(error)")
                }
            }
            thread.start()
        }
        let finished = try await offThePool { done.wait(timeout: .now() + 120) }
        #expect(finished == .success, "senders did not finish")
        #expect(acks.errors.isEmpty, "\(acks.errors.prefix(5))")
        let acknowledged = acks.all
        let sentTexts = acknowledged.values.flatMap { $0 }
        try #require(sentTexts.count == users.count * perSender)

        gateway.killHard()
        #expect(gateway.process.terminationStatus == 128 + SIGKILL)
        first = nil

        let second = try GatewayProcess(dataDirectory: dataDirectory, workingDirectory: root)
        let reader = try RawChatClient(port: second.port, tls: false, path: "/v1/ws?token=\(try second.token(for: users[0]))",
                                    timeoutSeconds: 20)
        let history = try reader.fullHistory(channelID)
        #expect(history.count == 500)
        #expect(history.seqs == Array(1...500))
        #expect(Set(history.ids).count == history.count, "duplicate message ids")
        #expect(Set(history.texts).count == history.count, "duplicate texts")
        #expect(Set(history.texts) == Set(sentTexts))
        // Each sender waited for every ok: its messages are stored in its own order.
        for (index, texts) in acknowledged {
            let stored = history.filter { $0["senderId"] as? String == users[index] }.texts
            #expect(stored == texts, "sender \(index)")
        }
        // New messages continue the sequence.
        #expect(try reader.send(channelID, "after restart")["seq"] as? Int == 501)
    }

    @Test("a restart on the same data folder keeps users, channels, history and clientMessageId idempotency")
    func restartKeepsState() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        var channelID = ""
        var stored: [String: Any] = [:]
        do {
            let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
            let alice = try await gateway.connect("alice")
            try await gateway.createUsers(["bob"])
            _ = try alice.ok("user.update", ["name": "Alice", "metadata": ["k": "v"]])
            channelID = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "name": "kept"])["id"] as? String)
            stored = try alice.send(channelID, "keep me", ["clientMessageId": "cm-restart"])
            gateway.clock.advance(by: 1000)
            try alice.send(channelID, "and me")
        }
        let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
        let alice = try await gateway.connect("alice")
        let channel = try alice.ok("channel.get", ["channelId": channelID])
        #expect(channel["name"] as? String == "kept")
        #expect(channel["members"] as? [String] == ["alice", "bob"])
        #expect(channel["isOneToOne"] as? Bool == true)
        #expect((channel["lastMessage"] as? [String: Any])?["text"] as? String == "and me")
        let me = try #require(try alice.ok("me")["user"] as? [String: Any])
        #expect(me["name"] as? String == "Alice")
        #expect(me["metadata"] as? [String: String] == ["k": "v"])
        #expect(try alice.fullHistory(channelID).texts == ["keep me", "and me"])
        let retried = try alice.send(channelID, "keep me", ["clientMessageId": "cm-restart"])
        #expect(retried["id"] as? String == stored["id"] as? String)
        #expect(retried["seq"] as? Int == 1)
        #expect(try alice.send(channelID, "third")["seq"] as? Int == 3)
        #expect(try alice.fullHistory(channelID).count == 3)
    }
}
