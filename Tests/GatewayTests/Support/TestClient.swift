import COpenSSL
import Foundation
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

struct TestClientError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A blocking loopback client for end-to-end tests: plain TCP or TLS (its own
/// OpenSSL client, independent of the gateway's TLS code), with every read
/// bounded by a timeout so a test fails instead of hanging.
final class TestClient {
    private let fd: Int32
    private var ssl: OpaquePointer?
    private var sslContext: OpaquePointer?
    private var pending: [UInt8] = []
    var webSocket = WebSocketConnection(role: .client, maxMessageBytes: 1 << 24)
    private var events: [WebSocketConnection.Event] = []
    /// A chat connection (`/v1/ws`), whose frames `WireRecorder` samples.
    private var isChatSession = false
    private var pendingRequests: [String: (type: String, frame: [UInt8])] = [:]

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// `receiveBufferBytes` pins the kernel's receive buffer (no autotuning), for slow-consumer tests.
    /// `session` (from `copySession()` of an earlier client) offers that TLS session for resumption.
    init(port: Int, tls: Bool = false, tlsVersion: Int32? = nil, timeoutSeconds: Int = 5,
         receiveBufferBytes: Int32? = nil, session: OpaquePointer? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket failed") }
        if var receiveBufferBytes {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBufferBytes, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            // No close here: the instance is fully initialised, so deinit runs and closes `fd`.
            // Closing it twice closed whatever socket or file had reused the number meanwhile.
            throw TestClientError("connect to \(port) failed: errno \(errno)")
        }
        if tls {
            guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TestClientError("SSL_CTX_new") }
            sslContext = ctx
            if let tlsVersion {
                _ = copenssl_ctx_set_min_proto_version(ctx, tlsVersion)
                _ = copenssl_ctx_set_max_proto_version(ctx, tlsVersion)
            }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
            let ssl = SSL_new(ctx)
            self.ssl = ssl
            SSL_set_fd(ssl, fd)
            if let session { SSL_set_session(ssl, session) }
            guard SSL_connect(ssl) == 1 else { throw TestClientError("TLS handshake failed") }
        }
    }

    deinit {
        if let ssl { SSL_free(ssl) }
        if let sslContext { SSL_CTX_free(sslContext) }
        close(fd)
    }

    var tlsVersion: String? { ssl.map { String(cString: SSL_get_version($0)) } }

    /// Whether the TLS handshake resumed the offered session (no certificate, no key exchange).
    var sessionReused: Bool { ssl.map { SSL_session_reused($0) == 1 } ?? false }

    /// Sends TLS close_notify: OpenSSL keeps a session resumable only after a clean shutdown.
    func shutdownTLS() {
        if let ssl { SSL_shutdown(ssl) }
    }

    /// The TLS session to offer on a later connection (with the ticket the server sent, once
    /// something was read after the handshake); free it with `SSL_SESSION_free`.
    func copySession() -> OpaquePointer? { ssl.flatMap { SSL_get1_session($0) } }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { raw -> Int in
                if let ssl { return Int(SSL_write(ssl, raw.baseAddress, Int32(raw.count))) }
                return Glibc.write(fd, raw.baseAddress, raw.count)
            }
            guard n > 0 else { throw TestClientError("write failed") }
            offset += n
        }
    }

    func write(_ text: String) throws { try write(Array(text.utf8)) }

    /// Drops the TCP connection at once, without a close frame (a client that vanishes).
    func dropConnection() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Reads what is available; empty at EOF; throws on timeout.
    func readSome() throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var n: Int
        repeat {
            // A signal (the SIGCHLD of a gateway child process) must not read as EOF.
            n = buffer.withUnsafeMutableBytes { raw -> Int in
                if let ssl { return Int(SSL_read(ssl, raw.baseAddress, Int32(raw.count))) }
                return read(fd, raw.baseAddress, raw.count)
            }
        } while n < 0 && errno == EINTR && ssl == nil
        if n > 0 { return Array(buffer[..<n]) }
        if n == 0 || (ssl != nil && errno != EAGAIN) || errno == ECONNRESET { return [] }
        if errno == EAGAIN || errno == EWOULDBLOCK { throw TestClientError("read timed out") }
        throw TestClientError("read failed: errno \(errno)")
    }

    /// True once the server closed the TCP connection (EOF or reset).
    func waitForEOF() throws -> Bool {
        while true {
            let bytes = try readSome()
            if bytes.isEmpty { return true }
        }
    }

    /// Reads one HTTP response (headers plus Content-Length body).
    func readResponse() throws -> Response {
        while true {
            if let end = find([13, 10, 13, 10], in: pending) {
                let head = String(decoding: pending[..<end], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestClientError("bad status line") }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                while pending.count < end + 4 + length {
                    let more = try readSome()
                    if more.isEmpty { throw TestClientError("EOF in body") }
                    pending += more
                }
                let body = String(decoding: pending[(end + 4)..<(end + 4 + length)], as: UTF8.self)
                pending = Array(pending[(end + 4 + length)...])
                return Response(status: status, headers: headers, body: body)
            }
            let more = try readSome()
            if more.isEmpty { throw TestClientError("EOF before response") }
            pending += more
        }
    }

    /// Sends an upgrade request and reads the answer; on 101 the WebSocket state is ready.
    func upgrade(path: String, headers extra: [String] = [], deflate: Bool = false) throws -> Response {
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if deflate { request += "Sec-WebSocket-Extensions: \(DeflateParameters.clientOfferHeaderValue)\r\n" }
        for line in extra { request += line + "\r\n" }
        request += "\r\n"
        try write(request)
        let response = try readResponse()
        if response.status == 101 {
            isChatSession = path.hasPrefix("/v1/ws")
            let parameters = response.headers["sec-websocket-extensions"].flatMap { DeflateParameters.clientAccept(response: [$0]) }
            webSocket = WebSocketConnection(role: .client, maxMessageBytes: 1 << 24, deflate: parameters)
        }
        return response
    }

    func sendText(_ text: String) throws {
        if isChatSession, let request = WireRecorder.request(Array(text.utf8)) {
            pendingRequests[request.id] = (request.type, request.frame)
        }
        try write(webSocket.encodeText(Array(text.utf8)))
    }

    /// The next message, ping, pong or close; pongs for pings are answered automatically.
    func nextEvent() throws -> WebSocketConnection.Event {
        while true {
            if !events.isEmpty {
                let event = events.removeFirst()
                if case .send(let bytes) = event {
                    try? write(bytes)
                    continue
                }
                if isChatSession, case .text(let bytes) = event, let recorder = WireRecorder.shared {
                    recorder.received(bytes, pending: &pendingRequests)
                }
                return event
            }
            if !pending.isEmpty {
                let bytes = pending
                pending = []
                webSocket.receive(bytes, events: &events)
                continue
            }
            let bytes = try readSome()
            if bytes.isEmpty { throw TestClientError("EOF while waiting for a WebSocket event") }
            webSocket.receive(bytes, events: &events)
        }
    }

    /// The next text message as a String, skipping pings and pongs.
    func nextText() throws -> String {
        while true {
            switch try nextEvent() {
            case .text(let bytes): return String(decoding: bytes, as: UTF8.self)
            case .ping, .pong: continue
            case let other: throw TestClientError("expected text, got \(other)")
            }
        }
    }

    /// Waits for the server's close frame and returns its code.
    func nextClose() throws -> CloseCode? {
        while true {
            switch try nextEvent() {
            case .closed(let code, _): return code
            case .failed(let error): throw TestClientError("client saw protocol error \(error)")
            default: continue
            }
        }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where Array(haystack[i..<(i + needle.count)]) == needle {
            return i
        }
        return nil
    }
}
