import Testing
@testable import WebSocket

/// The client's side of the opening handshake against this package's server side: the
/// request it writes, and the one check of the answer (status, accept value, extensions).
@Suite struct ClientHandshakeTests {
    /// The server's upgrade decision for `handshake`'s request, as the gateway makes it.
    private func serverUpgrade(for handshake: WebSocketClientHandshake, allowDeflate: Bool = true) throws -> WebSocketHandshake.Upgrade {
        var parser = HTTPRequestParser()
        let request = try #require(try handshake.request.withUnsafeBytes { try parser.feed($0) })
        guard case .success(let upgrade) = WebSocketHandshake.validate(request, allowDeflate: allowDeflate) else {
            Issue.record("the server refused the client's request")
            throw WebSocketError.protocolError("refused")
        }
        return upgrade
    }

    private func answer(_ status: Int, _ headers: [(name: String, value: String)], body: String = "") -> [UInt8] {
        HTTPResponse(status: status, headers: headers, body: Array(body.utf8)).serialized()
    }

    @Test func theServersAnswerIsAcceptedAndTheFramesBehindItAreLeftOver() throws {
        var handshake = WebSocketClientHandshake(host: "127.0.0.1:8080", target: "/v1/ws?token=t")
        let upgrade = try serverUpgrade(for: handshake)
        let frame: [UInt8] = [0x81, 0x02, 0x68, 0x69]
        let bytes = WebSocketHandshake.response(for: upgrade).serialized() + frame
        // In two pieces: the head is read only once it is complete.
        #expect(handshake.receive(Array(bytes.prefix(20))) == .needMoreBytes)
        #expect(handshake.receive(Array(bytes.dropFirst(20))) == .accepted(deflate: nil, leftover: frame))
    }

    @Test func theRequestAsksForAWebSocketWithAFreshKey() throws {
        let first = WebSocketClientHandshake(host: "example.com:443", target: "/v1/ws?auth=message",
                                             extensions: DeflateParameters.clientOfferHeaderValue)
        let second = WebSocketClientHandshake(host: "example.com:443", target: "/v1/ws?auth=message")
        let text = String(decoding: first.request, as: UTF8.self)
        #expect(text.hasPrefix("GET /v1/ws?auth=message HTTP/1.1\r\nHost: example.com:443\r\n"))
        #expect(text.contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"))
        #expect(first.expectedAccept != second.expectedAccept)
        #expect(try serverUpgrade(for: first).deflate != nil)
    }

    @Test func anHTTPErrorIsRefusedWithItsStatusAndBody() {
        var handshake = WebSocketClientHandshake(host: "h:1", target: "/v1/ws")
        let body = #"{"error":{"code":"ERR_NOT_LOGGED_IN"}}"#
        #expect(handshake.receive(answer(401, [("Content-Type", "application/json")], body: body))
            == .refused(.status(401, body: Array(body.utf8))))
    }

    @Test func aWrongOrMissingAcceptIsRefused() {
        for accept in ["s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", nil] {
            var handshake = WebSocketClientHandshake(host: "h:1", target: "/v1/ws")
            var headers: [(name: String, value: String)] = [("Upgrade", "websocket"), ("Connection", "Upgrade")]
            if let accept { headers.append(("Sec-WebSocket-Accept", accept)) }
            #expect(handshake.receive(answer(101, headers)) == .refused(.badAccept))
        }
    }

    @Test func anExtensionNotOfferedIsRefused() throws {
        var handshake = WebSocketClientHandshake(host: "h:1", target: "/v1/ws")
        let accept = handshake.expectedAccept
        let reply = answer(101, [("Sec-WebSocket-Accept", accept), ("Sec-WebSocket-Extensions", "permessage-deflate")])
        #expect(handshake.receive(reply) == .refused(.badExtensions("permessage-deflate")))
    }

    @Test func theDeflateTheServerAgreedToIsReturned() throws {
        var handshake = WebSocketClientHandshake(host: "h:1", target: "/v1/ws",
                                                 extensions: "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
        let upgrade = try serverUpgrade(for: handshake)
        let outcome = handshake.receive(WebSocketHandshake.response(for: upgrade).serialized())
        let agreed = DeflateParameters(serverNoContextTakeover: true, clientNoContextTakeover: true)
        #expect(outcome == .accepted(deflate: agreed, leftover: []))
    }

    @Test func anUnusableAnswerToTheOfferIsRefused() {
        var handshake = WebSocketClientHandshake(host: "h:1", target: "/v1/ws", extensions: DeflateParameters.clientOfferHeaderValue)
        let reply = answer(101, [("Sec-WebSocket-Accept", handshake.expectedAccept),
                                 ("Sec-WebSocket-Extensions", "permessage-deflate; server_max_window_bits=20")])
        #expect(handshake.receive(reply) == .refused(.badExtensions("permessage-deflate; server_max_window_bits=20")))
    }

    @Test func aHeadPastTheLimitIsRefused() {
        var handshake = WebSocketClientHandshake(host: "h:1", target: "/v1/ws", maxHeadBytes: 1024)
        let endless = Array("HTTP/1.1 101 Switching Protocols\r\nX-Filler: ".utf8) + [UInt8](repeating: 0x61, count: 900)
        #expect(handshake.receive(endless) == .needMoreBytes)
        #expect(handshake.receive([UInt8](repeating: 0x61, count: 200)) == .refused(.headTooLarge(limit: 1024)))
        #expect(WebSocketClientHandshake.Refusal.headTooLarge(limit: 16 * 1024).description == "response head over 16 KiB")
    }
}
