import ChatCore
import Foundation
import ServiceTestSupport
import Testing
import WebSocket
@testable import Gateway

/// PROTOCOL.md §1 (v1.2): the token after the upgrade. `/v1/ws?auth=message` upgrades without
/// a token; the first message `{"type":"auth","token"}` opens the session, and a refused one
/// closes the socket with the close code a browser can read.
@Suite("Token after the upgrade")
struct AuthAfterUpgradeTests {
    /// A chat gateway whose connections get 600 s for their `auth`, so a loaded test machine
    /// does not close them before a test has sent it (the timeout has a test of its own): in
    /// the full suite a test's steps wait for the busy cooperative pool, a minute at worst seen.
    private func makeGateway(tls: Bool, configure: (inout GatewayConfiguration) -> Void = { _ in }) async throws -> TestGateway {
        try await TestGateway.chat(tls: tls) { transport, chat in
            transport.timeouts.handshake = 600
            configure(&chat)
        }
    }

    /// An upgraded `?auth=message` connection that has not authenticated yet.
    private func upgrade(_ gateway: TestGateway, query: String = "") async throws -> RawChatClient {
        let (port, tls) = (gateway.port, gateway.tls)
        return try await offThePool { try RawChatClient(port: port, tls: tls, path: "/v1/ws?auth=message\(query)") }
    }

    /// Sends `auth` with `token`; its reply.
    private func authenticate(_ client: RawChatClient, _ token: String) async throws -> [String: Any] {
        let ref = UnsafeTransfer(value: client)
        return try await offThePool { try ref.value.request("auth", ["token": token]) }
    }

    /// The next close frame's code and reason (events and replies before it are skipped).
    private func closeFrame(_ client: RawChatClient) async throws -> (code: UInt16?, reason: String) {
        let ref = UnsafeTransfer(value: client)
        return try await offThePool {
            while true {
                switch try ref.value.connection.nextEvent() {
                case .closed(let code, let reason): return (code?.rawValue, reason)
                case .failed(let error): throw TestClientError("protocol error \(error)")
                default: continue
                }
            }
        }
    }

    private func blocking<T>(_ client: RawChatClient, _ body: @escaping (RawChatClient) throws -> T) async throws -> T {
        let ref = UnsafeTransfer(value: client)
        return try await offThePool { try body(ref.value) }
    }

    @Test("auth as the first message opens the session; its reply is me's result", arguments: [false, true])
    func authOpensSession(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let client = try await upgrade(gateway)
        let token = try await gateway.token(for: "alice", name: "Alice")
        let reply = try await authenticate(client, token)
        #expect(reply["type"] as? String == "ok", "\(reply)")
        let result = try #require(reply["result"] as? [String: Any])
        #expect(Set(result.keys) == ["user", "blockedUserIds"])
        #expect((result["user"] as? [String: Any])?["id"] as? String == "alice")
        #expect((result["user"] as? [String: Any])?["name"] as? String == "Alice")
        // From then on it is a session like any other: requests, and events from others.
        let bob = try await gateway.connect("bob")
        let channel = try #require(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"]])["id"] as? String)
        try bob.send(channel, "hello")
        let event = try await blocking(client) { try $0.nextEvent("message.new") }
        #expect((event["data"] as? [String: Any])?["text"] as? String == "hello")
        let me = try await blocking(client) { try $0.ok("me") }
        #expect((me["user"] as? [String: Any])?["id"] as? String == "alice")
    }

    @Test("device and hideBlocked of the upgrade's query apply to the session", arguments: [false, true])
    func queryOptionsApply(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let client = try await upgrade(gateway, query: "&device=phone&hideBlocked=1")
        #expect(try await authenticate(client, try await gateway.token(for: "alice"))["type"] as? String == "ok")
        let records = try await gateway.sessionRecords(of: "alice")
        #expect(records.map(\.device) == ["phone"])
        #expect(records.map(\.hideBlocked) == [true])
        // And hideBlocked does what it says: a blocked user's group message does not reach it.
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let channel = try #require(try carol.ok("channel.create", ["channelType": "group", "userIds": ["alice", "bob"]])["id"] as? String)
        _ = try await blocking(client) { try $0.ok("user.block", ["userIds": ["bob"]]) }
        try bob.send(channel, "from bob")
        try carol.send(channel, "from carol")
        let event = try await blocking(client) { try $0.nextEvent("message.new") }
        #expect((event["data"] as? [String: Any])?["text"] as? String == "from carol")
        #expect(try await blocking(client) { try $0.takeEvents("message.new") }.isEmpty)
    }

    @Test("before auth, other requests answer ERR_NOT_LOGGED_IN and the connection keeps waiting", arguments: [false, true])
    func requestsBeforeAuth(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let token = try await gateway.token(for: "alice")
        let client = try await upgrade(gateway)
        for type in ["me", "channel.list", "no.such.type"] {
            let reply = try await blocking(client) { try $0.request(type, ["limit": 10]) }
            #expect((reply["error"] as? [String: Any])?["code"] as? String == "ERR_NOT_LOGGED_IN", "\(type): \(reply)")
        }
        let notJSON = try await blocking(client) { try $0.sendRaw("{not json") }
        #expect((notJSON["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")
        let noToken = try await blocking(client) { try $0.request("auth", ["token": 42]) }
        #expect((noToken["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")
        let reply = try await authenticate(client, token)
        #expect(reply["type"] as? String == "ok")
    }

    @Test("requests pipelined behind auth are answered once the session is open, in order", arguments: [false, true])
    func pipelinedBehindAuth(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let client = try await upgrade(gateway)
        let token = try await gateway.token(for: "alice")
        let replies = try await blocking(client) { client -> [Int: [String: Any]] in
            _ = try client.fire("auth", ["token": token])
            _ = try client.fire("me")
            _ = try client.fire("user.update", ["name": "Alice P."])
            return try client.replies(count: 3)
        }
        #expect(replies.values.allSatisfy { $0["type"] as? String == "ok" }, "\(replies)")
        #expect(((replies[2]?["result"] as? [String: Any])?["user"] as? [String: Any])?["id"] as? String == "alice")
        #expect((replies[3]?["result"] as? [String: Any])?["name"] as? String == "Alice P.")
    }

    @Test("a refused token closes 4004 with ERR_NOT_LOGGED_IN in the reason", arguments: [false, true])
    func invalidTokenCloses4004(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let forger = await TokenAuthority(secret: "another-secret-at-least-32-bytes-long-for-hs256", clock: gateway.clock)
        let forged = try await forger.issue(userID: "alice", ttlSeconds: 3600).token
        for token in ["", "abc.def.ghi", forged] {
            let client = try await upgrade(gateway)
            try await blocking(client) { _ = try $0.fire("auth", ["token": token]) }
            let close = try await closeFrame(client)
            #expect(close.code == 4004, "token \(token.prefix(10)): \(close)")
            #expect(close.reason.hasPrefix("ERR_NOT_LOGGED_IN"), "\(close.reason)")
            #expect(!close.reason.contains(token) || token.isEmpty)
        }
    }

    @Test("an expired token closes 4001 with ERR_TOKEN_EXPIRED", arguments: [false, true])
    func expiredTokenCloses4001(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let client = try await upgrade(gateway)
        let token = try await gateway.token(for: "alice", ttlSeconds: -5)
        try await blocking(client) { _ = try $0.fire("auth", ["token": token]) }
        let close = try await closeFrame(client)
        #expect(close.code == 4001)
        #expect(close.reason.hasPrefix("ERR_TOKEN_EXPIRED"), "\(close.reason)")
    }

    @Test("a deactivated user closes 4002", arguments: [false, true])
    func deactivatedCloses4002(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        try await gateway.createUsers(["mallory"])
        #expect(try await gateway.admin("POST", "/v1/admin/users/mallory/deactivate").status == 200)
        let client = try await upgrade(gateway)
        let token = try await gateway.token(for: "mallory")
        try await blocking(client) { _ = try $0.fire("auth", ["token": token]) }
        let close = try await closeFrame(client)
        #expect(close.code == 4002)
        #expect(close.reason.hasPrefix("ERR_FORBIDDEN"), "\(close.reason)")
    }

    @Test("the connection cap is checked at auth: 4005", arguments: [false, true])
    func connectionCapCloses4005(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls) { $0.limits.maxConnectionsPerUser = 1 }
        let token = try await gateway.token(for: "alice")
        // Upgrades without a token are not counted: both get their 101.
        let first = try await upgrade(gateway)
        let second = try await upgrade(gateway)
        #expect(try await authenticate(first, token)["type"] as? String == "ok")
        try await blocking(second) { _ = try $0.fire("auth", ["token": token]) }
        let close = try await closeFrame(second)
        #expect(close.code == 4005)
        #expect(close.reason.hasPrefix("ERR_FORBIDDEN"), "\(close.reason)")
        // The first session is unaffected.
        #expect(try await blocking(first) { try $0.ok("me") }["user"] != nil)
    }

    @Test("no auth within the handshake timeout: closed", arguments: [false, true])
    func noAuthInTime(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls) { transport, _ in transport.timeouts.handshake = 1 }
        let client = try await upgrade(gateway)
        // Timed on the reading thread: a test task's resumption waits behind the whole suite's
        // tasks on the cooperative pool, which the gateway's timer does not.
        let ref = UnsafeTransfer(value: client)
        let (close, waited) = try await offThePool {
            let started = ContinuousClock.now
            while true {
                switch try ref.value.connection.nextEvent() {
                case .closed(let code, let reason): return ((code: code?.rawValue, reason: reason), ContinuousClock.now - started)
                case .failed(let error): throw TestClientError("protocol error \(error)")
                default: continue
                }
            }
        }
        #expect(close.code == 1008)
        #expect(close.reason.hasPrefix("ERR_NOT_LOGGED_IN"), "\(close.reason)")
        #expect(waited < .seconds(9), "well before the default 10 s")
    }

    @Test("a second auth after success answers ERR_BAD_REQUEST and changes nothing", arguments: [false, true])
    func secondAuthRefused(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let client = try await upgrade(gateway)
        #expect(try await authenticate(client, try await gateway.token(for: "alice"))["type"] as? String == "ok")
        let again = try await authenticate(client, try await gateway.token(for: "bob"))
        #expect((again["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST", "\(again)")
        let me = try await blocking(client) { try $0.ok("me") }
        #expect((me["user"] as? [String: Any])?["id"] as? String == "alice")
        // The same on a connection whose token came with the upgrade.
        let bob = try await gateway.connect("bob")
        let reply = try bob.request("auth", ["token": try await gateway.token(for: "bob")])
        #expect((reply["error"] as? [String: Any])?["code"] as? String == "ERR_BAD_REQUEST")
    }

    @Test("session.expiring and the 4001 close follow the token of the auth message (manual clock)", arguments: [false, true])
    func expiryAfterAuth(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        let client = try await upgrade(gateway)
        #expect(try await authenticate(client, try await gateway.token(for: "alice", ttlSeconds: 90))["type"] as? String == "ok")
        gateway.clock.advance(by: 31_000)
        let event = try await blocking(client) { try $0.nextEvent("session.expiring") }
        #expect((event["data"] as? [String: Any])?["expiresAt"] is Int)
        gateway.clock.advance(by: 60_000)
        #expect(try await closeFrame(client).code == 4001)
    }

    @Test("without auth=message a missing token is still 401", arguments: [false, true])
    func missingTokenStill401(tls: Bool) async throws {
        let gateway = try await makeGateway(tls: tls)
        for path in ["/v1/ws", "/v1/ws?auth=header", "/v1/ws?device=x"] {
            #expect(try await gateway.upgrade(path: path).response.status == 401, "\(path)")
        }
    }

    @Test("presence: the user is online once auth opened the session, offline when it closes")
    func presenceFollowsAuth() async throws {
        let gateway = try await makeGateway(tls: false)
        let bob = try await gateway.connect("bob")
        try await gateway.createUsers(["alice"])
        _ = try bob.ok("presence.subscribe", ["userIds": ["alice"]])
        let client = try await upgrade(gateway)
        #expect(try bob.ok("user.get", ["userId": "alice"])["online"] as? Bool == false)
        #expect(try await authenticate(client, try await gateway.token(for: "alice"))["type"] as? String == "ok")
        let online = try bob.nextEvent("user.presence")
        #expect((online["data"] as? [String: Any])?["online"] as? Bool == true)
        client.connection.dropConnection()
        let offline = try bob.nextEvent("user.presence")
        #expect((offline["data"] as? [String: Any])?["online"] as? Bool == false)
    }
}

extension TestGateway {
    /// The records of `user`'s live sessions: the engine's ids, each session's record read on its loop.
    func sessionRecords(of user: String) async throws -> [SessionRecord] {
        let service = try #require(server.router.chat)
        var records: [SessionRecord] = []
        for id in service.queue.sync(execute: { service.engine.sessions(of: user) }) {
            let shard = try #require(service.shard(at: SessionAddress(id).loopIndex))
            let record = await withCheckedContinuation { done in shard.loop.execute { done.resume(returning: shard.session(id)?.record) } }
            records.append(try #require(record))
        }
        return records
    }
}
