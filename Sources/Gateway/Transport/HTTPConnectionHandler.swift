import EventLoop
import WebSocket

/// Reads one HTTP request per connection, answers it or upgrades it to a
/// WebSocket, and from then on feeds the WebSocket channel.
final class HTTPConnectionHandler: ConnectionHandler {
    private enum Phase {
        case request(HTTPRequestParser, since: UInt64)
        /// The request is complete; its answer needs the chat core first.
        case deciding(HTTPRequest, leftover: [UInt8])
        /// The connection closed while its upgrade was being decided.
        case abandoned
        case webSocket(WebSocketChannel)
        case done
    }

    private var phase: Phase
    private let router: HTTPRouter
    private let settings: TransportSettings
    private let observer: ConnectionObserver

    init(router: HTTPRouter, settings: TransportSettings, observer: ConnectionObserver, tick: UInt64) {
        self.router = router
        self.settings = settings
        self.observer = observer
        phase = .request(HTTPRequestParser(), since: tick)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        switch phase {
        case .webSocket(let channel):
            channel.receive(bytes)
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
                respond(HTTPResponse.error(status: error.status, code: "ERR_BAD_REQUEST", message: error.message), on: connection)
            }
        case .abandoned:
            break
        case .deciding(let request, let leftover):
            // A client that pipelines frames before its 101 arrives: keep them, within reason.
            guard leftover.count + bytes.count <= settings.maxMessageBytes + 14 else {
                phase = .done
                connection.closeNow()
                return
            }
            phase = .deciding(request, leftover: leftover + Array(bytes))
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
            phase = .deciding(request, leftover: leftover)
            let handler = UncheckedBox(self)
            let socket = UncheckedBox(connection)
            start { decision in
                socket.value.loop.execute {
                    handler.value.resume(with: decision.value, on: socket.value)
                }
            }
        case .respond(let response):
            if response.status >= 400 {
                observer.handshakeRejected(connection, status: response.status, reason: request.path)
            }
            respond(response, on: connection)
        case .upgrade(let upgrade, let application):
            connection.write(WebSocketHandshake.response(for: upgrade).serialized())
            let state = WebSocketConnection(role: .server, maxMessageBytes: settings.maxMessageBytes, deflate: upgrade.deflate)
            let channel = WebSocketChannel(socket: connection, protocolState: state, application: application,
                                           timeouts: settings.timeouts)
            phase = .webSocket(channel)
            observer.webSocketOpened(connection, path: request.path, deflate: upgrade.deflate != nil, user: application.userForLogs)
            application.webSocketDidOpen(channel)
            if connection.state != .open {
                // The client left while the upgrade was being decided.
                phase = .done
                application.webSocketDidClose(channel)
                observer.webSocketClosed(connection, code: nil, user: application.userForLogs)
                return
            }
            if !leftover.isEmpty { leftover.withUnsafeBytes { channel.receive($0) } }
        }
    }

    private func resume(with decision: HTTPRouter.Decision, on connection: SocketConnection) {
        switch phase {
        case .deciding(let request, let leftover):
            if router.isDraining, case .upgrade(_, let application) = decision {
                // Decided after the drain began: refuse rather than open a WebSocket nobody will close.
                application.webSocketAbandoned()
                apply(.respond(.error(status: 503, code: "ERR_DRAINING", message: "gateway is draining")),
                      request: request, leftover: leftover, on: connection)
                return
            }
            apply(decision, request: request, leftover: leftover, on: connection)
        case .abandoned:
            phase = .done
            if case .upgrade(_, let application) = decision { application.webSocketAbandoned() }
        default:
            break
        }
    }

    private func respond(_ response: HTTPResponse, on connection: SocketConnection) {
        phase = .done
        connection.write(response.serialized(closeConnection: true))
        connection.close()
    }

    func connectionTick(_ connection: SocketConnection, tick: UInt64) {
        switch phase {
        case .request(_, let since):
            if tick >= since + settings.timeouts.handshake {
                phase = .done
                observer.handshakeRejected(connection, status: 408, reason: "handshake timeout")
                connection.closeNow()
            }
        case .webSocket(let channel):
            channel.tick(tick)
        case .deciding, .abandoned, .done:
            break
        }
    }

    /// Shutdown: WebSockets get close 1001. A request still arriving or being
    /// decided is answered (503 for upgrades and `/readyz`), bounded by the
    /// handshake timeout; anything else is dropped.
    func goAway(_ connection: SocketConnection) {
        switch phase {
        case .webSocket(let channel):
            channel.close(code: .goingAway, reason: "server shutting down")
        case .request, .deciding:
            break
        case .abandoned, .done:
            connection.closeNow()
        }
    }

    func connectionDidClose(_ connection: SocketConnection) {
        switch phase {
        case .webSocket(let channel):
            channel.application.webSocketDidClose(channel)
            observer.webSocketClosed(connection, code: channel.closeCode, user: channel.application.userForLogs)
            phase = .done
        case .deciding:
            phase = .abandoned
        default:
            phase = .done
        }
    }
}
