import Foundation
import ServiceTestSupport
import Testing
import WebSocket
@testable import Gateway

/// PROTOCOL.md §10: the admin API over raw HTTP.
@Suite("Admin API")
struct AdminAPITests {
    @Test("no key or a wrong key: 401 with the JSON error body", arguments: [false, true])
    func authentication(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let wrong = try await gateway.admin("POST", "/v1/admin/users", body: ["id": "eve"], key: "not-the-key")
        #expect(wrong.status == 401)
        #expect(wrong.isErrorShape)
        let none = try await gateway.http("POST", "/v1/admin/users", body: ["id": "eve"])
        #expect(none.status == 401)
        #expect(none.isErrorShape)
        // Nothing was created.
        let alice = try await gateway.connect("alice")
        #expect(try alice.errorCode("user.get", ["userId": "eve"]) == "ERR_UID_NOT_FOUND")
        let right = try await gateway.admin("POST", "/v1/admin/users", body: ["id": "eve"])
        #expect(right.status == 200)
        #expect(try alice.ok("user.get", ["userId": "eve"])["id"] as? String == "eve")
    }

    @Test("admin calls share one keep-alive connection, pipelined or not, plain and TLS", arguments: [false, true])
    func keepAlive(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let (port, key) = (gateway.port, gateway.chat.admin.apiKey)
        let statuses = try await offThePool { () throws -> [Int] in
            let client = try TestClient(port: port, tls: tls)
            func request(_ id: String) -> [UInt8] {
                let body = "{\"id\":\"\(id)\"}"
                return Array("POST /v1/admin/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
            }
            var statuses: [Int] = []
            try client.write(request("ka1"))
            statuses.append(try client.readResponse().status)
            // Three behind each other in one write: each waits for the store, answered in order.
            try client.write(request("ka2") + request("ka3") + request("ka4"))
            for _ in 0..<3 { statuses.append(try client.readResponse().status) }
            return statuses
        }
        #expect(statuses == [200, 200, 200, 200])
        let alice = try await gateway.connect("alice")
        for id in ["ka1", "ka2", "ka3", "ka4"] {
            #expect(try alice.ok("user.get", ["userId": id])["id"] as? String == id)
        }
    }

    @Test("POST /v1/admin/users creates then updates a user")
    func createAndUpdateUser() async throws {
        let gateway = try await TestGateway.chat()
        let created = try await gateway.admin("POST", "/v1/admin/users",
                                        body: ["id": "frank", "name": "Frank", "image": "f.png", "metadata": ["tier": "gold"]])
        #expect(created.status == 200, "\(created.body)")
        #expect(created.headers["content-type"] == "application/json")
        #expect(created.json["id"] as? String == "frank")
        #expect(created.json["name"] as? String == "Frank")
        #expect(created.json["metadata"] as? [String: String] == ["tier": "gold"])
        let updated = try await gateway.admin("POST", "/v1/admin/users", body: ["id": "frank", "name": "Frank II"])
        #expect(updated.status == 200)
        #expect(updated.json["name"] as? String == "Frank II")
        #expect(updated.json["image"] as? String == "f.png")
        let alice = try await gateway.connect("alice")
        let seen = try alice.ok("user.get", ["userId": "frank"])
        #expect(seen["name"] as? String == "Frank II")
        #expect(seen["image"] as? String == "f.png")
        #expect(seen["metadata"] as? [String: String] == ["tier": "gold"])
        let bad = try await gateway.admin("POST", "/v1/admin/users", body: ["id": "no spaces allowed"])
        #expect(bad.status == 400)
        #expect(bad.isErrorShape)
        let missing = try await gateway.admin("POST", "/v1/admin/users", body: ["name": "nobody"])
        #expect(missing.status == 400)
    }

    @Test("POST /v1/admin/tokens issues a working token with the given ttl")
    func issueToken() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["grace"])
        let now = gateway.clock.now()
        let issued = try await gateway.admin("POST", "/v1/admin/tokens", body: ["userId": "grace", "ttlSeconds": 300])
        #expect(issued.status == 200, "\(issued.body)")
        let token = try #require(issued.json["token"] as? String)
        let expiresAt = issued.json["expiresAt"] as? Int
        #expect(expiresAt != nil && abs((expiresAt ?? 0) - Int(now + 300_000)) <= 1000)
        let grace = try await gateway.connect(token: token)
        #expect((try grace.ok("me")["user"] as? [String: Any])?["id"] as? String == "grace")
        // The ttl is honoured: past it the token is refused.
        gateway.clock.advance(by: 301_000)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response.status == 401)
        let defaultTTL = try await gateway.admin("POST", "/v1/admin/tokens", body: ["userId": "grace"])
        #expect(defaultTTL.status == 200)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(defaultTTL.json["token"] as? String ?? "")").response.status == 101)
        #expect(try await gateway.admin("POST", "/v1/admin/tokens", body: ["userId": "bad id!"]).status == 400)
    }

    @Test("POST /v1/admin/channels creates a group the members see and use")
    func createChannel() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["ann", "ben", "cat"])
        let ann = try await gateway.connect("ann")
        let ben = try await gateway.connect("ben")
        let created = try await gateway.admin("POST", "/v1/admin/channels",
                                        body: ["type": "group", "name": "ops", "userIds": ["ann", "ben", "cat"]])
        #expect(created.status == 200, "\(created.body)")
        #expect(Shapes.keys(created.json) == Shapes.channel)
        let id = try #require(created.json["id"] as? String)
        #expect(created.json["members"] as? [String] == ["ann", "ben", "cat"])
        #expect(created.json["isOneToOne"] as? Bool == false)
        #expect((try ann.nextEvent("channel.updated")["data"] as? [String: Any])?["id"] as? String == id)
        let sent = try ann.send(id, "hello ops")
        #expect(sent["seq"] as? Int == 1)
        #expect((try ben.nextEvent("message.new")["data"] as? [String: Any])?["id"] as? String == sent["id"] as? String)
        #expect((try ben.ok("channel.list")["channels"] as? [[String: Any]] ?? []).ids == [id])

        let named = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "open", "id": "c_town_square", "userIds": ["ben"]])
        #expect(named.status == 200, "\(named.body)")
        #expect(named.json["id"] as? String == "c_town_square")
        #expect(named.json["type"] as? String == "open")
        #expect(named.json["members"] as? [String] == ["ben"])
        #expect(try ann.ok("channel.get", ["channelId": "c_town_square"])["type"] as? String == "open")
        let unknown = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "userIds": ["ann", "ghost"]])
        #expect(unknown.status == 404 || unknown.status == 400)
        #expect(unknown.errorCode == "ERR_UID_NOT_FOUND")
        let pair = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "userIds": ["ann", "cat"]])
        #expect(pair.json["isOneToOne"] as? Bool == true)
    }

    @Test("POST /v1/admin/channels distinct: the same two users twice, in either order, get one channel, also one a user made")
    func distinctChannelIsFoundAgain() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["ann", "ben", "cat"])
        let first = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "userIds": ["ann", "ben"], "distinct": true])
        let again = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "userIds": ["ben", "ann"], "distinct": true])
        #expect(first.status == 200 && again.status == 200, "\(first.body) \(again.body)")
        let id = try #require(first.json["id"] as? String)
        #expect(again.json["id"] as? String == id)
        // A distinct channel a user made is found by the backend too, and the other way round.
        let cat = try await gateway.connect("cat")
        let made = try #require(try cat.ok("channel.create", ["channelType": "group", "userIds": ["ann"], "distinct": true])["id"] as? String)
        let found = try await gateway.admin("POST", "/v1/admin/channels", body: ["type": "group", "userIds": ["ann", "cat"], "distinct": true])
        #expect(found.json["id"] as? String == made)
        #expect(try cat.ok("channel.create", ["channelType": "group", "userIds": ["ann"], "distinct": true])["id"] as? String == made)
        let ann = try await gateway.connect("ann")
        #expect(try ann.ok("channel.create", ["channelType": "group", "userIds": ["ben"], "distinct": true])["id"] as? String == id)
    }

    @Test("POST /v1/admin/users/{id}/deactivate closes live connections with 4002 and refuses new ones")
    func deactivate() async throws {
        let gateway = try await TestGateway.chat()
        let henry1 = try await gateway.connect("henry", query: "&device=a")
        let henry2 = try await gateway.connect("henry", query: "&device=b")
        let ivy = try await gateway.connect("ivy")
        let response = try await gateway.admin("POST", "/v1/admin/users/henry/deactivate")
        #expect(response.status == 200, "\(response.body)")
        #expect(try henry1.connection.nextClose() == CloseCode.userDeactivated)
        #expect(try henry2.connection.nextClose() == CloseCode.userDeactivated)
        let token = try await gateway.token(for: "henry")
        let refused = try await gateway.upgrade(path: "/v1/ws?token=\(token)").response
        #expect(refused.status == 403)
        #expect(HTTPJSON(status: refused.status, headers: [:], body: refused.body, json: parseJSONObject(refused.body)).isErrorShape)
        #expect(try ivy.ok("me")["user"] != nil)
        let unknown = try await gateway.admin("POST", "/v1/admin/users/nobody/deactivate")
        #expect(unknown.status == 404)
        #expect(unknown.isErrorShape)
    }

    @Test("healthz and readyz need no key")
    func health() async throws {
        let gateway = try await TestGateway.chat()
        #expect(try await gateway.http("GET", "/healthz").status == 200)
        #expect(try await gateway.http("GET", "/readyz").status == 200)
    }
}
