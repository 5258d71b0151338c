import ChatCore
import Foundation
import Testing
import WebSocket
@testable import Gateway

/// PROTOCOL.md §1: authenticating the upgrade, and the HTTP errors of a refused one.
@Suite("Handshake and authentication")
struct HandshakeAuthTests {
    /// The §1 error body: `{"error":{"code","message"}}` and the code.
    private func expectRejection(_ response: TestClient.Response, status: Int, code: String?,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "body: \(response.body)", sourceLocation: sourceLocation)
        let body = HTTPJSON(status: response.status, headers: response.headers, body: response.body,
                            json: parseJSONObject(response.body))
        #expect(body.isErrorShape, "body: \(response.body)", sourceLocation: sourceLocation)
        if let code { #expect(body.errorCode == code, sourceLocation: sourceLocation) }
        #expect(response.headers["sec-websocket-accept"] == nil, sourceLocation: sourceLocation)
    }

    @Test("a token in ?token= opens a session for its sub", arguments: [false, true])
    func tokenInQuery(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let token = try await gateway.token(for: "alice")
        let (client, response) = try await gateway.upgrade(path: "/v1/ws?token=\(token)&device=phone")
        #expect(response.status == 101)
        _ = client
        let alice = try await gateway.connect(token: token)
        let me = try alice.ok("me")
        #expect((me["user"] as? [String: Any])?["id"] as? String == "alice")
    }

    @Test("a token in Authorization: Bearer opens a session", arguments: [false, true])
    func bearerHeader(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        let token = try await gateway.token(for: "bob")
        let client = try TestClient(port: gateway.port, tls: tls)
        let response = try client.upgrade(path: "/v1/ws", headers: ["Authorization: Bearer \(token)"])
        #expect(response.status == 101)
        try client.sendText(#"{"id":1,"type":"me"}"#)
        let reply = parseJSONObject(try client.nextText())
        #expect(reply["type"] as? String == "ok")
        #expect(((reply["result"] as? [String: Any])?["user"] as? [String: Any])?["id"] as? String == "bob")
    }

    @Test("no token: 401 ERR_NOT_LOGGED_IN", arguments: [false, true])
    func missingToken(tls: Bool) async throws {
        let gateway = try await TestGateway.chat(tls: tls)
        expectRejection(try await gateway.upgrade(path: "/v1/ws").response, status: 401, code: "ERR_NOT_LOGGED_IN")
        expectRejection(try await gateway.upgrade(path: "/v1/ws?token=").response, status: 401, code: "ERR_NOT_LOGGED_IN")
        expectRejection(try await gateway.upgrade(path: "/v1/ws", headers: ["Authorization: Basic YWxpY2U6eA=="]).response,
                        status: 401, code: "ERR_NOT_LOGGED_IN")
    }

    @Test("a malformed token: 401 ERR_NOT_LOGGED_IN")
    func malformedToken() async throws {
        let gateway = try await TestGateway.chat()
        for token in ["abc", "abc.def.ghi", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0"] {
            expectRejection(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response, status: 401, code: "ERR_NOT_LOGGED_IN")
        }
    }

    @Test("a token signed with another secret: 401 ERR_NOT_LOGGED_IN")
    func badSignature() async throws {
        let gateway = try await TestGateway.chat()
        let forger = await TokenAuthority(secret: "another-secret-at-least-32-bytes-long-for-hs256", clock: gateway.clock)
        let forged = try await forger.issue(userID: "alice", ttlSeconds: 3600).token
        expectRejection(try await gateway.upgrade(path: "/v1/ws?token=\(forged)").response, status: 401, code: "ERR_NOT_LOGGED_IN")
        expectRejection(try await gateway.upgrade(path: "/v1/ws", headers: ["Authorization: Bearer \(forged)"]).response,
                        status: 401, code: "ERR_NOT_LOGGED_IN")
        // The same claims signed with the right secret pass: the signature is what failed.
        let genuine = try await gateway.token(for: "alice")
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(genuine)").response.status == 101)
    }

    @Test("a sub outside 1-128 chars of [A-Za-z0-9_.@-]: 401 ERR_NOT_LOGGED_IN")
    func invalidSub() async throws {
        let gateway = try await TestGateway.chat()
        for sub in ["bad user", "a/b", "ünï", String(repeating: "a", count: 129)] {
            let token = try await gateway.token(for: sub)
            expectRejection(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response, status: 401, code: "ERR_NOT_LOGGED_IN")
        }
        let longest = try await gateway.token(for: String(repeating: "a", count: 128))
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(longest)").response.status == 101)
        let symbols = try await gateway.token(for: "A-z_0.9@x")
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(symbols)").response.status == 101)
    }

    @Test("an expired token: 401 ERR_TOKEN_EXPIRED (manual clock)")
    func expiredToken() async throws {
        let gateway = try await TestGateway.chat()
        let token = try await gateway.token(for: "alice", ttlSeconds: 10)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response.status == 101)
        gateway.clock.advance(by: 11_000)
        expectRejection(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response, status: 401, code: "ERR_TOKEN_EXPIRED")
    }

    @Test("an Origin outside allowedOrigins: 403; a listed one or none passes")
    func originAllowList() async throws {
        let gateway = try await TestGateway.chat { _, chat in
            chat.server.allowedOrigins = ["https://app.example.com"]
        }
        let token = try await gateway.token(for: "alice")
        expectRejection(try await gateway.upgrade(path: "/v1/ws?token=\(token)", headers: ["Origin: https://evil.example.com"]).response,
                        status: 403, code: nil)
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(token)", headers: ["Origin: https://app.example.com"]).response.status == 101)
    }

    @Test("a deactivated user: 403")
    func deactivatedUser() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["mallory"])
        let token = try await gateway.token(for: "mallory")
        #expect(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response.status == 101)
        #expect(try await gateway.admin("POST", "/v1/admin/users/mallory/deactivate").status == 200)
        expectRejection(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response, status: 403, code: nil)
    }

    @Test("an unknown path: 404 with the JSON error body")
    func unknownPath() async throws {
        let gateway = try await TestGateway.chat()
        let token = try await gateway.token(for: "alice")
        expectRejection(try await gateway.upgrade(path: "/v1/nowhere?token=\(token)").response, status: 404, code: nil)
        let plain = try await gateway.http("GET", "/nothing-here")
        #expect(plain.status == 404)
        #expect(plain.isErrorShape)
    }

    @Test("not a valid WebSocket upgrade: 400")
    func badUpgrade() async throws {
        let gateway = try await TestGateway.chat()
        let token = try await gateway.token(for: "alice")
        let path = "/v1/ws?token=\(token)"
        let requests = [
            // version 12
            "GET \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 12\r\n\r\n",
            // no key
            "GET \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
            // a key that is not base64 of 16 bytes
            "GET \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n",
            // not GET
            "POST \(path) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n",
        ]
        for request in requests {
            let client = try TestClient(port: gateway.port)
            try client.write(request)
            expectRejection(try client.readResponse(), status: 400, code: nil)
        }
    }

    @Test("the token's name is upserted into the profile on connect")
    func profileFromToken() async throws {
        let gateway = try await TestGateway.chat()
        let token = try await gateway.token(for: "alice", name: "Alice Liddell")
        let alice = try await gateway.connect(token: token)
        let me = try alice.ok("me")
        #expect((me["user"] as? [String: Any])?["name"] as? String == "Alice Liddell")
        let bob = try await gateway.connect("bob")
        #expect(try bob.ok("user.get", ["userId": "alice"])["name"] as? String == "Alice Liddell")
    }
}
