#if os(Linux)
import EventLoop
import Foundation
import WebSocket

/// `ChatTransport` on this package's own event loop and WebSocket client role: plain `ws://`,
/// or `wss://` with the `TLSContext` given; by default one that verifies the server against the
/// system's trust store and the host name.
public final class WebSocketTransport: ChatTransport, @unchecked Sendable {
    private let group: EventLoopGroup
    private let tls: TLSContext?

    /// - Parameters:
    ///   - group: the loop the connections live on (one loop of its own by default).
    ///   - tls: the client context for `wss://` (default: `TLSContext.verifyingClient()`).
    public init(group: EventLoopGroup = EventLoopGroup(count: 1), tls: TLSContext? = nil) {
        self.group = group
        self.tls = tls
    }

    public func connect(to url: String) async throws -> any ChatTransportConnection {
        let target: WebSocketURL
        do throws(WebSocketURL.ParseError) {
            target = try WebSocketURL(url)
        } catch {
            throw ChatClientError(.connectionFailed,
                                  "not a ws:// or wss:// URL with a host and a valid port: \(Self.describe(url))")
        }
        var context: TLSContext?
        if target.secure {
            if let tls {
                context = tls
            } else {
                do throws(TLSError) {
                    context = try TLSContext.verifyingClient()
                } catch {
                    throw ChatClientError(.connectionFailed, "TLS: \(error)")
                }
            }
        }
        let connection = WebSocketTransportConnection(target: target, loop: group.next())
        try await connection.open(tls: context)
        return connection
    }

    /// A URL as errors may show it: up to its path, without user info, query or fragment, where a
    /// credential could be (a token an app put in the query itself, a password before the host).
    static func describe(_ url: String) -> String {
        var shown = url.prefix { $0 != "?" && $0 != "#" }
        let afterScheme = shown.range(of: "://").map(\.upperBound) ?? shown.startIndex
        let authorityEnd = shown[afterScheme...].firstIndex(of: "/") ?? shown.endIndex
        if let at = shown[afterScheme..<authorityEnd].lastIndex(of: "@") {
            shown.removeSubrange(afterScheme...at)
        }
        let dropped = shown.count < url.count ? "…" : ""
        return "\"" + shown.prefix(200) + dropped + "\""
    }
}

/// One WebSocket on the loop: the upgrade, then text messages into `events`. Everything
/// mutable is touched on the loop only.
final class WebSocketTransportConnection: ChatTransportConnection, ConnectionHandler, @unchecked Sendable {
    private enum Phase { case connecting, upgrading, open, closed }

    let events: AsyncStream<TransportEvent>
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let host: String
    private let port: Int
    private let loop: EventLoop
    private var phase = Phase.connecting
    private var socket: SocketConnection?
    private var webSocket = WebSocketConnection(role: .client, maxMessageBytes: 16 << 20)
    private var handshake: WebSocketClientHandshake
    private var response: [UInt8] = []
    private var frameEvents: [WebSocketConnection.Event] = []
    private var opened: CheckedContinuation<Void, any Error>?
    private var closeCode: Int?
    /// The reason of the server's close frame (a refusal's names its `ERR_*` code).
    private var closeReason = ""

    init(target: WebSocketURL, loop: EventLoop) {
        host = target.host
        port = target.port(secure: target.secure)
        self.loop = loop
        handshake = WebSocketClientHandshake(host: WebSocketURL.hostHeader(host: host, port: port), target: target.target)
        (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self)
    }

    func open(tls: TLSContext?) async throws {
        try await withCheckedThrowingContinuation { (opened: CheckedContinuation<Void, any Error>) in
            loop.execute { [self] in
                self.opened = opened
                do {
                    socket = try SocketConnection.connect(host: host, port: port, loop: loop, tls: tls,
                                                          handler: self)
                } catch {
                    fail(ChatClientError(.connectionFailed, "connect to \(host):\(port): \(error)"))
                }
            }
        }
    }

    func send(_ text: String) {
        loop.execute { [self] in
            guard phase == .open, let socket else { return }
            socket.write(webSocket.encodeText(Array(text.utf8)))
        }
    }

    func close() {
        loop.execute { [self] in
            guard phase == .open, let socket else { return }
            if let frame = webSocket.encodeClose(code: .normal) { socket.write(frame) }
            socket.close()
        }
    }

    /// Drops the TCP connection without a close frame, as a network failure would (tests).
    func dropForTesting() {
        loop.execute { [self] in socket?.closeNow() }
    }

    // MARK: ConnectionHandler (on the loop)

    func connectionDidConnect(_ connection: SocketConnection) {
        phase = .upgrading
        connection.write(handshake.request)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        switch phase {
        case .upgrading: upgrade(bytes, on: connection)
        case .open: receive(bytes, on: connection)
        case .connecting, .closed: break
        }
    }

    func connectionDidClose(_ connection: SocketConnection) {
        switch phase {
        case .connecting, .upgrading:
            fail(ChatClientError(.connectionFailed, "closed before the upgrade completed"))
        case .open:
            continuation.yield(.closed(code: closeCode, reason: closeCode == nil ? "connection lost" : closeReason))
            continuation.finish()
        case .closed:
            break
        }
        phase = .closed
        socket = nil
    }

    private func upgrade(_ bytes: UnsafeRawBufferPointer, on connection: SocketConnection) {
        response.append(contentsOf: bytes)
        guard let head = HTTPResponseHead.parse(response) else {
            if response.count > 64 * 1024 { refuse(ChatClientError(.connectionFailed, "response head too large"), connection) }
            return
        }
        guard head.status == 101 else {
            let body = response.count > head.byteCount ? Array(response[head.byteCount...]) : []
            refuse(Self.refusal(status: head.status, body: body), connection)
            return
        }
        guard head.header("Sec-WebSocket-Accept") == handshake.expectedAccept else {
            refuse(ChatClientError(.connectionFailed, "bad Sec-WebSocket-Accept"), connection)
            return
        }
        phase = .open
        let rest = Array(response[head.byteCount...])
        response = []
        opened?.resume()
        opened = nil
        if !rest.isEmpty { rest.withUnsafeBytes { receive($0, on: connection) } }
    }

    /// The handshake's HTTP error as a `ChatClientError` (its `ERR_*` code when the body has one).
    static func refusal(status: Int, body: [UInt8]) -> ChatClientError {
        var message = "HTTP \(status)"
        var code = ChatClientError.Code.handshakeRefused
        if let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
           let error = object["error"] as? [String: Any] {
            if let text = error["message"] as? String { message = text }
            if let wire = error["code"] as? String, wire == "ERR_NOT_LOGGED_IN" || wire == "ERR_TOKEN_EXPIRED" {
                code = ChatClientError.Code(wire: wire)
            }
        }
        return ChatClientError(code, message, status: status)
    }

    private func refuse(_ error: ChatClientError, _ connection: SocketConnection) {
        fail(error)
        connection.close()
    }

    private func fail(_ error: ChatClientError) {
        phase = .closed
        opened?.resume(throwing: error)
        opened = nil
        continuation.finish()
    }

    private func receive(_ bytes: UnsafeRawBufferPointer, on connection: SocketConnection) {
        webSocket.receive(bytes, events: &frameEvents)
        for event in frameEvents {
            switch event {
            case .text(let payload):
                continuation.yield(.text(String(decoding: payload, as: UTF8.self)))
            case .send(let frame):
                connection.write(frame)
            case .closed(let code, let reason):
                closeCode = code.map { Int($0.rawValue) } ?? 1005
                closeReason = reason.isEmpty ? "closed" : reason
                connection.close()
            case .failed:
                closeCode = 1002
                connection.close()
            default:
                break
            }
        }
        frameEvents.removeAll(keepingCapacity: true)
    }
}
#endif
