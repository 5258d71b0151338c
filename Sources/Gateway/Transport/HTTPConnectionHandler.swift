import EventLoop
import WebSocket

/// Reads one HTTP request per connection, answers it or upgrades it to a
/// WebSocket, and from then on feeds the WebSocket channel.
final class HTTPConnectionHandler: ConnectionHandler {
    private enum Phase {
        case request(HTTPRequestParser, since: UInt64)
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
        case .done:
            break
        }
    }

    private func handle(_ request: HTTPRequest, leftover: [UInt8], on connection: SocketConnection) {
        switch router.route(request) {
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
            observer.webSocketOpened(connection, path: request.path, deflate: upgrade.deflate != nil)
            application.webSocketDidOpen(channel)
            if !leftover.isEmpty { leftover.withUnsafeBytes { channel.receive($0) } }
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
        case .done:
            break
        }
    }

    /// Shutdown: WebSockets get close 1001, anything else is dropped.
    func goAway(_ connection: SocketConnection) {
        switch phase {
        case .webSocket(let channel):
            channel.close(code: .goingAway, reason: "server shutting down")
        case .request, .done:
            phase = .done
            connection.closeNow()
        }
    }

    func connectionDidClose(_ connection: SocketConnection) {
        if case .webSocket(let channel) = phase {
            channel.application.webSocketDidClose(channel)
            observer.webSocketClosed(connection, code: channel.closeCode)
        }
        phase = .done
    }
}
