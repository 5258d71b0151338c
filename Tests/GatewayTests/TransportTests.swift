import COpenSSL
import Testing
import WebSocket
@testable import Gateway

@Suite("Transport over real sockets")
struct TransportTests {
    @Test("healthz answers JSON", arguments: [false, true])
    func healthz(tls: Bool) throws {
        let gateway = try TestGateway(tls: tls)
        let client = try TestClient(port: gateway.port, tls: tls)
        try client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.body == "{\"status\":\"ok\"}")
        #expect(response.headers["content-type"] == "application/json")
    }

    @Test("echo round trip, plain and TLS, with and without deflate",
          arguments: [(false, false), (false, true), (true, false), (true, true)])
    func echo(tls: Bool, deflate: Bool) throws {
        let gateway = try TestGateway(tls: tls)
        let client = try TestClient(port: gateway.port, tls: tls)
        let response = try client.upgrade(path: "/v1/echo", deflate: deflate)
        #expect(response.status == 101)
        #expect(response.headers["sec-websocket-accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect((response.headers["sec-websocket-extensions"] != nil) == deflate)
        for text in ["hi", String(repeating: "héllo wörld ", count: 4000)] {
            try client.sendText(text)
            #expect(try client.nextText() == text)
        }
        try client.write(client.webSocket.encodeBinary([0, 1, 2, 255]))
        guard case .binary(let bytes) = try client.nextEvent() else {
            Issue.record("expected binary echo")
            return
        }
        #expect(bytes == [0, 1, 2, 255])
        try client.write(client.webSocket.encodeClose(code: .normal) ?? [])
        #expect(try client.nextClose() == .normal)
        #expect(try client.waitForEOF())
    }

    @Test("TLS 1.2 and 1.3 are accepted, 1.1 is refused")
    func tlsVersions() throws {
        let gateway = try TestGateway(tls: true)
        #expect(try TestClient(port: gateway.port, tls: true, tlsVersion: TLS1_3_VERSION).tlsVersion == "TLSv1.3")
        #expect(try TestClient(port: gateway.port, tls: true, tlsVersion: TLS1_2_VERSION).tlsVersion == "TLSv1.2")
        #expect(throws: TestClientError.self) { try TestClient(port: gateway.port, tls: true, tlsVersion: TLS1_1_VERSION) }
    }

    @Test("an RSA certificate serves TLS as well as ECDSA")
    func rsaCertificate() throws {
        let gateway = try TestGateway(tls: true, rsa: true)
        let client = try TestClient(port: gateway.port, tls: true)
        #expect(try client.upgrade(path: "/v1/echo").status == 101)
        try client.sendText("over RSA")
        #expect(try client.nextText() == "over RSA")
    }

    @Test("bad upgrades get the right status; a refused upgrade or unparsable request closes")
    func badUpgrades() throws {
        let gateway = try TestGateway()
        let cases: [(request: String, status: Int, closes: Bool)] = [
            ("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", 404, false),
            ("GET /v1/echo HTTP/1.1\r\nHost: x\r\n\r\n", 426, false),
            ("POST /v1/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", 400, true),
            ("GET /v1/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n", 400, true),
            ("GET /v1/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 12\r\n\r\n", 400, true),
            ("GET /v1/echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 9000))\r\n\r\n", 431, true),
            ("BROKEN\r\n\r\n", 400, true),
        ]
        for (request, status, closes) in cases {
            let client = try TestClient(port: gateway.port, timeoutSeconds: 5)
            try client.write(request)
            let response = try client.readResponse()
            #expect(response.status == status, "\(request.prefix(40))")
            #expect(response.body.hasPrefix("{\"error\":{\"code\":"))
            #expect((response.headers["connection"] == "close") == closes, "\(request.prefix(40))")
            if closes {
                #expect(try client.waitForEOF())
            } else {
                try client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200, "kept alive after \(request.prefix(40))")
            }
        }
    }

    @Test("a refused upgrade byte for byte: 426 names websocket, 400 for another version names 13, both with the §1 error body")
    func refusedUpgradeBytes() throws {
        let gateway = try TestGateway()
        let cases: [(request: String, response: String)] = [
            ("GET /v1/echo HTTP/1.1\r\nHost: x\r\n\r\n",
             "HTTP/1.1 426 Upgrade Required\r\nContent-Type: application/json\r\nSec-WebSocket-Version: 13\r\n"
                + "Upgrade: websocket\r\nContent-Length: 84\r\n\r\n"
                + #"{"error":{"code":"ERR_BAD_REQUEST","message":"this endpoint speaks WebSocket only"}}"#),
            ("GET /v1/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 12\r\n\r\n",
             "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nSec-WebSocket-Version: 13\r\n"
                + "Content-Length: 81\r\nConnection: close\r\n\r\n"
                + #"{"error":{"code":"ERR_BAD_REQUEST","message":"Sec-WebSocket-Version must be 13"}}"#),
        ]
        for (request, expected) in cases {
            let client = try TestClient(port: gateway.port, timeoutSeconds: 5)
            try client.write(request)
            var received: [UInt8] = []
            while received.count < expected.utf8.count {
                let more = try client.readSome()
                if more.isEmpty { break }
                received += more
            }
            #expect(String(decoding: received, as: UTF8.self) == expected)
        }
    }

    @Test("HTTP/1.1 keeps the connection for the next request, plain and TLS", arguments: [false, true])
    func keepAlive(tls: Bool) throws {
        let gateway = try TestGateway(tls: tls)
        let client = try TestClient(port: gateway.port, tls: tls)
        for _ in 0..<3 {
            try client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.headers["connection"] == nil)
        }
        try client.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let last = try client.readResponse()
        #expect(last.status == 200)
        #expect(last.headers["connection"] == "close")
        #expect(try client.waitForEOF())
    }

    @Test("HTTP/1.0 closes after its answer")
    func http10Closes() throws {
        let gateway = try TestGateway()
        let client = try TestClient(port: gateway.port, timeoutSeconds: 5)
        try client.write("GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().headers["connection"] == "close")
        #expect(try client.waitForEOF())
    }

    @Test("pipelined requests are answered in order, one read or split across reads")
    func pipelinedRequests() throws {
        let gateway = try TestGateway()
        let client = try TestClient(port: gateway.port, timeoutSeconds: 5)
        let requests = (0..<50).map { $0 % 2 == 0 ? "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" : "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n" }
        let bytes = Array(requests.joined().utf8)
        try client.write(Array(bytes[..<(bytes.count / 2 + 7)]))
        try client.write(Array(bytes[(bytes.count / 2 + 7)...]))
        for index in 0..<50 {
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.body == (index % 2 == 0 ? "{\"status\":\"ok\"}" : "{\"status\":\"ready\"}"))
        }
        // An upgrade behind answered requests still works on the same connection.
        #expect(try client.upgrade(path: "/v1/echo").status == 101)
        try client.sendText("after keep-alive")
        #expect(try client.nextText() == "after keep-alive")
    }

    @Test("an idle keep-alive connection is closed after the handshake timeout")
    func idleKeepAliveCloses() throws {
        let gateway = try TestGateway { $0.timeouts.handshake = 1 }
        let client = try TestClient(port: gateway.port, timeoutSeconds: 5)
        try client.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(try client.waitForEOF())
    }

    @Test("a client frame that is not masked closes with 1002")
    func unmaskedFrame() throws {
        let gateway = try TestGateway()
        let client = try TestClient(port: gateway.port)
        #expect(try client.upgrade(path: "/v1/echo").status == 101)
        try client.write(FrameWriter.frame(opcode: .text, payload: Array("hi".utf8)))
        #expect(try client.nextClose() == .protocolError)
        #expect(try client.waitForEOF())
    }

    @Test("a message over the size bound closes with 1009")
    func tooBig() throws {
        let gateway = try TestGateway { $0.maxMessageBytes = 1024 }
        let client = try TestClient(port: gateway.port)
        #expect(try client.upgrade(path: "/v1/echo").status == 101)
        try client.sendText(String(repeating: "x", count: 2000))
        #expect(try client.nextClose() == .messageTooBig)
    }

    @Test("an upgrade that never completes is dropped after the handshake timeout")
    func handshakeTimeout() throws {
        let gateway = try TestGateway { $0.timeouts.handshake = 1 }
        let client = try TestClient(port: gateway.port, timeoutSeconds: 5)
        try client.write("GET /v1/echo HTTP/1.1\r\n")
        #expect(try client.waitForEOF())
    }

    @Test("a silent connection is pinged, and closed when no pong comes")
    func idlePing() throws {
        let gateway = try TestGateway {
            $0.timeouts.idle = 1
            $0.timeouts.pongTimeout = 1
        }
        let client = try TestClient(port: gateway.port, timeoutSeconds: 6)
        #expect(try client.upgrade(path: "/v1/echo").status == 101)
        // Read raw bytes without answering the ping.
        var sawPing = false
        var events: [WebSocketConnection.Event] = []
        var parser = WebSocketConnection(role: .client, maxMessageBytes: 1024)
        var closeCode: CloseCode?
        while closeCode == nil {
            let bytes = try client.readSome()
            if bytes.isEmpty { break }
            parser.receive(bytes, events: &events)
            for event in events {
                if case .ping = event { sawPing = true }
                if case .closed(let code, _) = event { closeCode = code }
            }
            events.removeAll()
        }
        #expect(sawPing)
        #expect(closeCode == .goingAway)
    }

    @Test("frames sent right behind the upgrade request are not lost")
    func pipelinedFrame() throws {
        let gateway = try TestGateway()
        let client = try TestClient(port: gateway.port)
        var request = "GET /v1/echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        var bytes = Array(request.utf8)
        bytes += FrameWriter.frame(opcode: .text, payload: Array("early".utf8), maskKey: MaskKey(1, 2, 3, 4))
        try client.write(bytes)
        #expect(try client.readResponse().status == 101)
        #expect(try client.nextText() == "early")
    }
}
