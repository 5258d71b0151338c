#if os(Linux)
import EventLoop
import Foundation
import WebSocket
import WebSocketDriver

/// `ChatTransport` on this package's own event loop and WebSocket client role: plain `ws://`,
/// or `wss://` with the `TLSContext` given; by default one that verifies the server against the
/// system's trust store and the host name. A connection that goes quiet is pinged; one that
/// does not answer is reported closed (code nil), and `ChatClient` reconnects.
public final class WebSocketTransport: ChatTransport, @unchecked Sendable {
    /// When to ping and when to give up on the answer.
    public struct Keepalive: Sendable, Equatable {
        /// Quiet time (nothing received) after which a ping goes out.
        public var idle: Duration
        /// How long after that ping something must have arrived.
        public var pongTimeout: Duration

        public init(idle: Duration = .seconds(30), pongTimeout: Duration = .seconds(10)) {
            self.idle = idle
            self.pongTimeout = pongTimeout
        }
    }

    private let group: EventLoopGroup
    private let tls: TLSContext?
    private let keepalive: Keepalive?

    /// - Parameters:
    ///   - group: the loop the connections live on (one loop of its own by default).
    ///   - tls: the client context for `wss://` (default: `TLSContext.verifyingClient()`).
    ///   - keepalive: pings on a quiet connection (nil: none; the gateway still pings it).
    public init(group: EventLoopGroup = EventLoopGroup(count: 1), tls: TLSContext? = nil,
                keepalive: Keepalive? = Keepalive()) {
        self.group = group
        self.tls = tls
        self.keepalive = keepalive
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
        let connection = WebSocketTransportConnection(target: target, loop: group.next(), keepalive: keepalive)
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

/// One WebSocket on the loop: the client role's upgrade, then text messages into `events`,
/// and the keepalive checks. Everything mutable is touched on the loop only.
final class WebSocketTransportConnection: ChatTransportConnection, ConnectionHandler, @unchecked Sendable {
    private enum Phase { case connecting, upgrading, open, closed }

    let events: AsyncStream<TransportEvent>
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let host: String
    private let port: Int
    private let loop: EventLoop
    private var phase = Phase.connecting
    private var socket: SocketConnection?
    private let webSocket: WebSocketClientConnection
    /// How often keepalive is checked (nil: no keepalive).
    private let keepaliveCheckInterval: Duration?
    private var opened: CheckedContinuation<Void, any Error>?
    private var closeCode: Int?
    /// The reason of the server's close frame (a refusal's names its `ERR_*` code).
    private var closeReason = ""

    init(target: WebSocketURL, loop: EventLoop, keepalive: WebSocketTransport.Keepalive?) {
        host = target.host
        port = target.port(secure: target.secure)
        self.loop = loop
        let handshake = WebSocketClientHandshake(host: WebSocketURL.hostHeader(host: host, port: port), target: target.target,
                                                 maxHeadBytes: 64 * 1024)
        let inMilliseconds = keepalive.map {
            WebSocketKeepalive(idle: Self.milliseconds($0.idle), pongTimeout: Self.milliseconds($0.pongTimeout))
        }
        webSocket = WebSocketClientConnection(handshake: handshake, maxMessageBytes: 16 << 20, keepalive: inMilliseconds)
        // A few checks per period, so a ping or a timeout comes at most a quarter late.
        keepaliveCheckInterval = keepalive.map { max(.milliseconds(10), min($0.idle, $0.pongTimeout) / 4) }
        (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self)
    }

    private static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1000 + UInt64(max(0, attoseconds) / 1_000_000_000_000_000)
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
            webSocket.send(text: Array(text.utf8), on: socket)
        }
    }

    func close() {
        loop.execute { [self] in
            guard phase == .open, let socket else { return }
            if webSocket.isOpen {
                webSocket.close(code: .normal, on: socket)
            } else {
                socket.close()
            }
        }
    }

    /// Drops the TCP connection without a close frame, as a network failure would (tests).
    func dropForTesting() {
        loop.execute { [self] in socket?.closeNow() }
    }

    /// Stops reading, as a network that stopped delivering would: nothing more arrives,
    /// pongs included (tests).
    func stallForTesting() {
        loop.execute { [self] in socket?.pauseReading() }
    }

    // MARK: ConnectionHandler (on the loop)

    func connectionDidConnect(_ connection: SocketConnection) {
        phase = .upgrading
        webSocket.start(on: connection)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard phase == .upgrading || phase == .open else { return }
        webSocket.receive(bytes, on: connection) { event in
            switch event {
            case .opened:
                phase = .open
                opened?.resume()
                opened = nil
                scheduleKeepaliveCheck()
            case .refused(.status(let status, let body)):
                refuse(Self.refusal(status: status, body: body), connection)
            case .refused(let refusal):
                refuse(ChatClientError(.connectionFailed, "\(refusal)"), connection)
            case .text(let payload):
                continuation.yield(.text(String(decoding: payload, as: UTF8.self)))
            case .binary:
                break
            case .ended(let ending):
                end(ending)
            }
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

    /// The WebSocket ended; the socket is closing. The app hears it when the socket is gone,
    /// except after a ping timeout: the server is presumed gone, so at once.
    private func end(_ ending: WebSocketClientConnection.Ending) {
        switch ending {
        case .closed(let code, let reason):
            closeCode = code.map { Int($0.rawValue) } ?? 1005
            closeReason = reason.isEmpty ? "closed" : reason
        case .failed:
            closeCode = 1002
        case .pingTimeout:
            phase = .closed
            continuation.yield(.closed(code: nil, reason: "no answer to a ping"))
            continuation.finish()
        }
    }

    private func scheduleKeepaliveCheck() {
        guard let interval = keepaliveCheckInterval else { return }
        let (seconds, attoseconds) = interval.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        loop.queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in self?.checkKeepalive() }
    }

    private func checkKeepalive() {
        guard phase == .open, let socket else { return }
        let now = DispatchTime.now().uptimeNanoseconds / 1_000_000
        if case .ended(let ending) = webSocket.checkKeepalive(now: now, on: socket) {
            end(ending)
            return
        }
        scheduleKeepaliveCheck()
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
}
#endif
