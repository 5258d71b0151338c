import EventLoop
import WebSocket
import WebSocketDriver

/// Reads HTTP requests, answers them or upgrades one to a WebSocket, and from
/// then on feeds the WebSocket connection. An HTTP/1.1 request that is not an
/// upgrade and does not ask `Connection: close` keeps the connection for the
/// next one (an app backend calling the admin API pays one TLS handshake, not
/// one per call); pipelined requests are answered in order, and only while the
/// client reads its answers: past `pipelinedOutputLimit` unsent bytes the
/// connection stops reading until its output drains.
final class HTTPConnectionHandler: ConnectionHandler {
    /// What every connection of a server shares, held once rather than copied into each.
    final class Context: Sendable {
        let router: HTTPRouter
        let settings: TransportSettings
        let observer: ConnectionObserver

        init(router: HTTPRouter, settings: TransportSettings, observer: ConnectionObserver) {
            self.router = router
            self.settings = settings
            self.observer = observer
        }
    }

    /// The request phases' payloads are boxed (`indirect`), so a connection that
    /// became a WebSocket keeps a word here, not a request parser.
    private enum Phase {
        /// Accepted, waiting for a complete request head (or ClientHello) and then for the
        /// loop's turn to handshake (`connectionMayStart`); nothing reaches the handler until then.
        case waitingForTurn(since: UInt64)
        indirect case request(HTTPRequestParser, since: UInt64)
        /// The request is complete; its answer needs the chat core first.
        indirect case deciding(HTTPRequest, leftover: [UInt8])
        /// The connection closed while its upgrade was being decided.
        case abandoned
        case webSocket(WebSocketServerConnection)
        case done
    }

    private var phase: Phase
    /// Requests already answered on this connection (see `isIdleBetweenRequests`).
    private var answered = 0
    /// Bytes that followed an answered request (pipelining), parsed once it is answered.
    private var pipelined: [UInt8] = []
    /// Reading is paused until the answers already queued are written.
    private var awaitingDrain = false
    /// Reading is paused until the request being decided is answered: what its client
    /// sends meanwhile waits in the kernel, not in the loop's held-input budget.
    private var readingPausedWhileDeciding = false
    private let context: Context
    /// Unsent answer bytes past which pipelined requests wait for the client to read.
    static let pipelinedOutputLimit = 64 * 1024
    private var router: HTTPRouter { context.router }
    private var settings: TransportSettings { context.settings }
    private var observer: ConnectionObserver { context.observer }

    init(context: Context, tick: UInt64) {
        self.context = context
        phase = .waitingForTurn(since: tick)
    }

    func connectionMayStart(_ connection: SocketConnection) {
        guard case .waitingForTurn = phase else { return }
        phase = .request(HTTPRequestParser(), since: connection.loop.tick)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        if awaitingDrain || (!pipelined.isEmpty && isParsingRequests) {
            // Behind requests not parsed yet (a hang-up reports readable even while paused).
            pipelined += bytes
            return
        }
        receive(bytes, on: connection)
        parsePipelined(on: connection)
    }

    private var isParsingRequests: Bool {
        if case .request = phase { return true }
        return false
    }

    /// Requests that arrived behind one just answered, one at a time (a loop, not
    /// recursion, however many a client packs into one read), while the client reads
    /// the answers.
    private func parsePipelined(on connection: SocketConnection) {
        while !pipelined.isEmpty, isParsingRequests {
            if connection.queuedByteCount > Self.pipelinedOutputLimit {
                awaitingDrain = true
                connection.notifiesWhenDrained = true
                connection.pauseReading()
                return
            }
            let bytes = pipelined
            pipelined = []
            bytes.withUnsafeBytes { receive($0, on: connection) }
        }
    }

    func connectionDidDrain(_ connection: SocketConnection) {
        guard awaitingDrain else { return }
        awaitingDrain = false
        connection.notifiesWhenDrained = false
        connection.resumeReading()
        parsePipelined(on: connection)
    }

    func connectionIsSlow(_ connection: SocketConnection) {
        var user: String?
        if case .webSocket(let webSocket) = phase { user = webSocket.userForLogs }
        observer.slowConsumer(connection, queuedBytes: connection.queuedByteCount, user: user)
        switch phase {
        case .webSocket(let webSocket):
            webSocket.close(code: .slowConsumer, reason: "slow consumer")
        case .deciding:
            abandon(connection)
        case .waitingForTurn, .request, .abandoned, .done:
            if case .request = phase { phase = .done }
            connection.closeNow()
        }
    }

    private func receive(_ bytes: UnsafeRawBufferPointer, on connection: SocketConnection) {
        switch phase {
        case .webSocket(let webSocket):
            webSocket.receive(bytes)
        case .request(var parser, let since):
            phase = .done
            do {
                guard let request = try parser.feed(bytes) else {
                    phase = .request(parser, since: since)
                    return
                }
                handle(request, leftover: parser.leftover, on: connection)
            } catch {
                observer.handshakeRejected(connection, status: error.status, reason: error.message)
                respond(HTTPResponse.error(status: error.status, code: "ERR_BAD_REQUEST", message: error.message),
                        keepAlive: false, on: connection)
            }
        case .abandoned, .waitingForTurn:
            break
        case .deciding(let request, let leftover):
            // A client that pipelines frames before its 101 arrives: keep them, within reason
            // (its own bound and the loop's), and read no more until the decision.
            guard leftover.count + bytes.count <= Self.maxBytesBeforeUpgrade(settings),
                  connection.loop.heldInput.reserve(bytes.count)
            else {
                abandon(connection)
                return
            }
            phase = .deciding(request, leftover: leftover + Array(bytes))
            if !readingPausedWhileDeciding {
                readingPausedWhileDeciding = true
                connection.pauseReading()
            }
        case .done:
            break
        }
    }

    private func handle(_ request: HTTPRequest, leftover: [UInt8], on connection: SocketConnection) {
        apply(router.route(request, loop: connection.loop), request: request, leftover: leftover, on: connection)
    }

    private func apply(_ decision: HTTPRouter.Decision, request: HTTPRequest, leftover: [UInt8], on connection: SocketConnection) {
        switch decision {
        case .deferred(let start):
            guard leftover.count <= Self.maxBytesBeforeUpgrade(settings), connection.loop.heldInput.reserve(leftover.count)
            else {
                phase = .abandoned  // nothing was started: nothing to release
                connection.closeNow()
                return
            }
            phase = .deciding(request, leftover: leftover)
            // The handshake's own work (TLS, the request) is done: what remains waits on the
            // core or the store (a cluster node reads a new session's channels first), which
            // must not hold back other arrivals' handshakes.
            connection.finishHandshakeTurn()
            let loop = connection.loop
            let id = connection.id
            start { decision in
                loop.execute {
                    // The connection is found again by id; one gone meanwhile releases what it was granted.
                    guard let connection = loop.connection(id), let handler = connection.handler as? HTTPConnectionHandler else {
                        if case .upgrade(_, let application) = decision.opened(on: loop) { application.webSocketAbandoned() }
                        return
                    }
                    handler.resume(with: decision.opened(on: loop), on: connection)
                }
            }
        case .respond(let response):
            if !Self.isHandshake(request) {
                observer.httpAnswered(connection, method: request.method, path: request.path, status: response.status)
            } else if response.status >= 400 {
                observer.handshakeRejected(connection, status: response.status, reason: request.path)
            }
            let keepAlive = Self.keepsAlive(request) && !router.isDraining
            respond(response, keepAlive: keepAlive, on: connection)
            if keepAlive { pipelined = leftover }
        case .upgrade(let upgrade, let application):
            connection.finishHandshakeTurn()
            connection.write(WebSocketHandshake.response(for: upgrade).serialized())
            let state = WebSocketConnection(role: .server, maxMessageBytes: settings.maxMessageBytes, deflate: upgrade.deflate)
            let keepalive = WebSocketKeepalive(idle: settings.timeouts.idle, pongTimeout: settings.timeouts.pongTimeout)
            let webSocket = WebSocketServerConnection(socket: connection, protocolState: state, application: application,
                                                      keepalive: keepalive)
            phase = .webSocket(webSocket)
            observer.webSocketOpened(connection, path: request.path, deflate: upgrade.deflate != nil, user: application.userForLogs)
            application.webSocketDidOpen(webSocket)
            if connection.state != .open {
                // The client left while the upgrade was being decided.
                phase = .done
                application.webSocketDidClose(webSocket)
                observer.webSocketClosed(connection, code: nil, user: application.userForLogs)
                return
            }
            if !leftover.isEmpty { leftover.withUnsafeBytes { webSocket.receive($0) } }
        }
    }

    private func resume(with decision: HTTPRouter.Decision, on connection: SocketConnection) {
        switch phase {
        case .deciding(let request, let leftover):
            connection.loop.heldInput.release(leftover.count)
            if readingPausedWhileDeciding {
                readingPausedWhileDeciding = false
                connection.resumeReading()
            }
            if router.isDraining, case .upgrade(_, let application) = decision {
                // Decided after the drain began: refuse rather than open a WebSocket nobody will close.
                application.webSocketAbandoned()
                apply(.respond(.error(status: 503, code: "ERR_DRAINING", message: "gateway is draining")),
                      request: request, leftover: leftover, on: connection)
                return
            }
            apply(decision, request: request, leftover: leftover, on: connection)
            parsePipelined(on: connection)
        case .abandoned:
            phase = .done
            if case .upgrade(_, let application) = decision { application.webSocketAbandoned() }
        default:
            // Nobody will open it: release what the decision granted.
            if case .upgrade(_, let application) = decision { application.webSocketAbandoned() }
        }
    }

    /// One frame of the largest message, with its header: what a client may send behind its
    /// upgrade request before the 101.
    private static func maxBytesBeforeUpgrade(_ settings: TransportSettings) -> Int {
        settings.maxMessageBytes + 14
    }

    /// Drops a connection whose request is being decided; the decision, when it comes,
    /// releases what it reserved (an accepted session is abandoned, not left open).
    private func abandon(_ connection: SocketConnection) {
        if case .deciding(_, let leftover) = phase { connection.loop.heldInput.release(leftover.count) }
        phase = .abandoned
        connection.closeNow()
    }

    private func respond(_ response: HTTPResponse, keepAlive: Bool, on connection: SocketConnection) {
        connection.finishHandshakeTurn()
        answered += 1
        connection.write(response.serialized(closeConnection: !keepAlive))
        if keepAlive {
            phase = .request(HTTPRequestParser(), since: connection.loop.tick)
        } else {
            phase = .done
            connection.close()
        }
    }

    /// Whether `request` tries to open a WebSocket (its refusal is a refused handshake),
    /// rather than being a plain HTTP call (the admin API, `/metrics`, the console, a probe).
    static func isHandshake(_ request: HTTPRequest) -> Bool {
        request.path == "/v1/ws" || request.path == "/v1/echo" || request.headerContainsToken("upgrade", "websocket")
    }

    /// HTTP/1.1 persists unless the client says `Connection: close`; an upgrade
    /// request that was refused closes (its client reconnects to retry).
    private static func keepsAlive(_ request: HTTPRequest) -> Bool {
        request.version == "HTTP/1.1" && !request.headerContainsToken("Connection", "close")
            && request.header("Upgrade") == nil
    }

    /// A kept-alive connection with no byte of its next request yet: closed quietly, not refused.
    private func isIdleBetweenRequests(_ parser: HTTPRequestParser) -> Bool {
        answered > 0 && parser.bufferedByteCount == 0
    }

    func connectionTick(_ connection: SocketConnection, tick: UInt64) {
        switch phase {
        case .waitingForTurn(let since):
            // Waiting is bounded like the handshake itself, and counted apart from it.
            if tick >= since + settings.timeouts.handshake {
                phase = .done
                observer.handshakeRejected(connection, status: 408, reason: "no complete request or no turn within the handshake timeout")
                connection.closeNow()
            }
        case .request(let parser, let since):
            if tick >= since + settings.timeouts.handshakeTurn {
                // A peer this slow holds its connection, not the others' turns.
                connection.finishHandshakeTurn()
            }
            if tick >= since + settings.timeouts.handshake {
                phase = .done
                if isIdleBetweenRequests(parser) {
                    connection.close()
                    return
                }
                observer.handshakeRejected(connection, status: 408, reason: "handshake timeout")
                connection.closeNow()
            }
        case .webSocket(let webSocket):
            webSocket.tick(tick)
        case .deciding, .abandoned, .done:
            break
        }
    }

    /// Shutdown: WebSockets get close 1001. A request still arriving or being
    /// decided is answered (503 for upgrades and `/readyz`), bounded by the
    /// handshake timeout; anything else is dropped.
    func goAway(_ connection: SocketConnection) {
        switch phase {
        case .webSocket(let webSocket):
            webSocket.close(code: .goingAway, reason: "server shutting down")
        case .request(let parser, _) where isIdleBetweenRequests(parser):
            phase = .done
            connection.close()
        case .request, .deciding, .waitingForTurn:
            // Still arriving (a connection waits for its turn until its request head is
            // complete) or being decided: answered when it is.
            break
        case .abandoned, .done:
            connection.closeNow()
        }
    }

    func connectionDidClose(_ connection: SocketConnection) {
        switch phase {
        case .webSocket(let webSocket):
            webSocket.application.webSocketDidClose(webSocket)
            observer.webSocketClosed(connection, code: webSocket.closeCode, user: webSocket.userForLogs)
            phase = .done
        case .deciding(_, let leftover):
            connection.loop.heldInput.release(leftover.count)
            phase = .abandoned
        case .abandoned:
            phase = .abandoned
        default:
            phase = .done
        }
    }
}
