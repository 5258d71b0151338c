import Testing
@testable import WebSocket

private let rfcKey = "dGhlIHNhbXBsZSBub25jZQ=="

private func upgradeRequest(
    method: String = "GET", version: String = "HTTP/1.1", removing removed: Set<String> = [],
    extra: [(name: String, value: String)] = []
) -> HTTPRequest {
    let base: [(name: String, value: String)] = [
        ("Host", "chat.example.com"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", rfcKey), ("Sec-WebSocket-Version", "13"),
    ]
    let headers = base.filter { !removed.contains($0.name) } + extra
    return HTTPRequest(method: method, target: "/v1/ws?token=abc", version: version, headers: headers)
}

private func rejection(_ request: HTTPRequest) -> WebSocketHandshake.Rejection? {
    if case .failure(let rejection) = WebSocketHandshake.validate(request) { return rejection }
    return nil
}

private func upgrade(_ request: HTTPRequest, subprotocols: [String] = [], allowDeflate: Bool = true) -> WebSocketHandshake.Upgrade? {
    if case .success(let upgrade) = WebSocketHandshake.validate(request, supportedSubprotocols: subprotocols, allowDeflate: allowDeflate) {
        return upgrade
    }
    return nil
}

@Suite struct HandshakeTests {
    @Test func rfcAcceptValue() {
        #expect(WebSocketHandshake.acceptValue(forKey: rfcKey) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func validUpgrade() {
        #expect(upgrade(upgradeRequest()) == WebSocketHandshake.Upgrade(key: rfcKey, subprotocol: nil, deflate: nil))
    }

    @Test func responseBytes() throws {
        let accepted = try #require(upgrade(upgradeRequest()))
        let bytes = WebSocketHandshake.response(for: accepted).serialized()
        #expect(String(decoding: bytes, as: UTF8.self) == """
            HTTP/1.1 101 Switching Protocols\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r
            \r

            """)
    }

    @Test func responseBytesWithSubprotocolAndDeflate() throws {
        let request = upgradeRequest(extra: [
            ("Sec-WebSocket-Protocol", "chat.v1"),
            ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),
        ])
        let accepted = try #require(upgrade(request, subprotocols: ["chat.v1"]))
        let text = String(decoding: WebSocketHandshake.response(for: accepted).serialized(), as: UTF8.self)
        #expect(text == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat.v1\r\n"
            + "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n\r\n")
    }

    @Test(arguments: ["POST", "PUT", "HEAD", "get"])
    func nonGetIs400(method: String) {
        #expect(rejection(upgradeRequest(method: method))?.status == 400)
    }

    @Test func http10Is400() {
        #expect(rejection(upgradeRequest(version: "HTTP/1.0"))?.status == 400)
    }

    @Test func missingKeyIs400() {
        #expect(rejection(upgradeRequest(removing: ["Sec-WebSocket-Key"]))?.status == 400)
    }

    @Test(arguments: [
        "", "not base64!", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25j",  // unpadded / 15 bytes
        "dGhlIHNhbXBsZSBub25jZT8/", "dGhlIHNhbXBsZSBub25jZQ=a", "dGhlIHNhbXBsZSBub25jZ===", "=GhlIHNhbXBsZSBub25jZQ==",
        "dGhlIHNhbXBsZSBub25jZQ==dGhlIHNhbXBsZSBub25jZQ==",
    ])
    func invalidKeyIs400(key: String) {
        let request = upgradeRequest(removing: ["Sec-WebSocket-Key"], extra: [("Sec-WebSocket-Key", key)])
        #expect(rejection(request)?.status == 400)
    }

    @Test func twoKeysAre400() {
        #expect(rejection(upgradeRequest(extra: [("Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4PEA==")]))?.status == 400)
    }

    @Test func anyBase64Of16BytesIsAKey() {
        let request = upgradeRequest(removing: ["Sec-WebSocket-Key"], extra: [("Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4PEA==")])
        #expect(upgrade(request)?.key == "AQIDBAUGBwgJCgsMDQ4PEA==")
    }

    @Test(arguments: ["8", "12", "14", "13, 8", ""])
    func versionOtherThan13Is400WithTheSupportedVersion(version: String) {
        let request = upgradeRequest(removing: ["Sec-WebSocket-Version"], extra: [("Sec-WebSocket-Version", version)])
        #expect(rejection(request) == WebSocketHandshake.Rejection(
            status: 400, reason: "Sec-WebSocket-Version must be 13", headers: ["Sec-WebSocket-Version": "13"]))
    }

    @Test func missingVersionIs400() {
        let rejected = rejection(upgradeRequest(removing: ["Sec-WebSocket-Version"]))
        #expect(rejected?.status == 400)
        #expect(rejected?.headers["Sec-WebSocket-Version"] == "13")
    }

    @Test(arguments: [["Upgrade"], ["Connection"], ["Upgrade", "Connection"]])
    func missingUpgradeHeadersIs426(removed: [String]) {
        let rejected = rejection(upgradeRequest(removing: Set(removed)))
        #expect(rejected == WebSocketHandshake.Rejection(
            status: 426, reason: "this endpoint speaks WebSocket only",
            headers: ["Upgrade": "websocket", "Sec-WebSocket-Version": "13"]))
        #expect(rejected?.sortedHeaders.map(\.name) == ["Sec-WebSocket-Version", "Upgrade"])
    }

    @Test func upgradeHeaderTokensAreCaseInsensitiveAndListed() {
        let request = upgradeRequest(removing: ["Upgrade", "Connection"],
                                     extra: [("upgrade", "WebSocket"), ("connection", "keep-alive, Upgrade")])
        #expect(upgrade(request) != nil)
    }

    @Test func wrongUpgradeTokenIs426() {
        let request = upgradeRequest(removing: ["Upgrade"], extra: [("Upgrade", "h2c")])
        #expect(rejection(request)?.status == 426)
    }

    @Test func missingHostIs400() {
        #expect(rejection(upgradeRequest(removing: ["Host"]))?.status == 400)
    }

    @Test func rejectionSaysWhyForAPerson() {
        #expect(rejection(upgradeRequest(method: "POST"))
            == WebSocketHandshake.Rejection(status: 400, reason: "a WebSocket upgrade must be GET", headers: [:]))
        #expect(rejection(upgradeRequest(version: "HTTP/1.0"))?.reason == "a WebSocket upgrade needs HTTP/1.1")
    }

    @Test func subprotocolIsTheFirstSupportedOfTheOfferedList() {
        let request = upgradeRequest(extra: [("Sec-WebSocket-Protocol", "mqtt, chat.v2"), ("Sec-WebSocket-Protocol", "chat.v1")])
        #expect(upgrade(request, subprotocols: ["chat.v1", "chat.v2"])?.subprotocol == "chat.v2")
        #expect(upgrade(request, subprotocols: ["chat.v1"])?.subprotocol == "chat.v1")
    }

    @Test func noSubprotocolWhenNoneIsSupported() throws {
        let request = upgradeRequest(extra: [("Sec-WebSocket-Protocol", "mqtt")])
        let accepted = try #require(upgrade(request, subprotocols: ["chat.v1"]))
        #expect(accepted.subprotocol == nil)
        let text = String(decoding: WebSocketHandshake.response(for: accepted).serialized(), as: UTF8.self)
        #expect(!text.contains("Sec-WebSocket-Protocol"))
    }

    @Test func deflateIsNegotiatedOnlyWhenAllowed() {
        let request = upgradeRequest(extra: [("Sec-WebSocket-Extensions", "permessage-deflate")])
        #expect(upgrade(request)?.deflate == DeflateParameters())
        #expect(upgrade(request, allowDeflate: false)?.deflate == nil)
        #expect(upgrade(upgradeRequest())?.deflate == nil)
    }
}

/// `WebSocketURL`: the ws-URI of RFC 6455 §3 as the SDK and the load tool read it.
@Suite("WebSocket URL")
struct WebSocketURLTests {
    @Test func hostPortSchemeAndTarget() throws {
        let plain = try WebSocketURL("ws://127.0.0.1:8080/v1/ws?token=abc")
        #expect([plain.host, plain.target] == ["127.0.0.1", "/v1/ws?token=abc"])
        #expect(plain.port == 8080 && !plain.secure)
        let secure = try WebSocketURL("wss://chat.example.com")
        #expect([secure.host, secure.target] == ["chat.example.com", "/"])
        #expect(secure.port == nil && secure.port(secure: true) == 443)
        #expect(try WebSocketURL("ws://h?x=1").target == "/?x=1")
        #expect(try WebSocketURL("ws://h").port(secure: true) == 443, "TLS asked for on a ws:// URI")
        let v6 = try WebSocketURL("ws://[::1]:9000/p")
        #expect([v6.host, v6.target] == ["::1", "/p"] && v6.port == 9000)
        #expect(WebSocketURL.hostHeader(host: v6.host, port: 9000) == "[::1]:9000")
        #expect(WebSocketURL.hostHeader(host: "localhost", port: 80) == "localhost:80")
    }

    @Test func refusals() {
        #expect(throws: WebSocketURL.ParseError.scheme) { try WebSocketURL("http://h:1/") }
        for bad in ["ws://:80/", "ws://h:0", "ws://h:65536", "ws://h:x", "ws://[::1", "ws://[::1]x", ""] where !bad.isEmpty {
            #expect(throws: WebSocketURL.ParseError.hostOrPort, "\(bad)") { try WebSocketURL(bad) }
        }
    }
}
