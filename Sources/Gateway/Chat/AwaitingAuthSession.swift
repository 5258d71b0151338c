import ChatCore
import EventLoop
import WebSocket
import WebSocketDriver

/// What a `/v1/ws?auth=message` connection runs until its `auth` message opened a session
/// (PROTOCOL.md §1): the driver of `AuthMessageExchange`. Once the session is registered the
/// connection is handed over to its `ChatSession`, which is then exactly what a token in the
/// upgrade would have made. Lives on its loop (hence `@unchecked Sendable`: the verdict's
/// closure only brings it back to that loop).
final class AwaitingAuthSession: WebSocketApplication, @unchecked Sendable {
    private let service: ChatService
    private let options: ChatService.SessionOptions
    private let loop: EventLoop
    private var exchange: AuthMessageExchange?
    private var socket: WebSocketServerConnection?
    /// Seconds the `auth` message may take (the handshake timeout).
    private let timeoutSeconds: UInt64

    init(service: ChatService, options: ChatService.SessionOptions, loop: EventLoop, timeoutSeconds: UInt64) {
        self.service = service
        self.options = options
        self.loop = loop
        self.timeoutSeconds = timeoutSeconds
    }

    func webSocketDidOpen(_ socket: WebSocketServerConnection) {
        self.socket = socket
        exchange = AuthMessageExchange(now: loop.tick, timeoutSeconds: timeoutSeconds)
    }

    func webSocket(_ socket: WebSocketServerConnection, didReceiveText bytes: [UInt8]) {
        perform(exchange?.received(bytes) ?? [])
    }

    func webSocket(_ socket: WebSocketServerConnection, didReceiveBinary bytes: [UInt8]) {
        socket.close(code: .unsupportedData, reason: "binary messages are not accepted")
    }

    func webSocketTick(_ socket: WebSocketServerConnection) {
        perform(exchange?.tick(loop.tick) ?? [])
    }

    func webSocketDidClose(_ socket: WebSocketServerConnection) {
        self.socket = nil
        exchange?.connectionClosed()
    }

    func webSocketAbandoned() {
        exchange?.connectionClosed()
    }

    private func perform(_ actions: [AuthMessageExchange.Action]) {
        for action in actions {
            switch action {
            case .send(let reply):
                socket?.send(text: reply)
            case .authenticate(let token):
                let loop = self.loop
                service.authenticate(token, options: options, loop: loop) { [self] result in
                    loop.execute { self.perform(self.exchange?.verdict(result) ?? []) }
                }
            case .open(let record, let requestID, let held):
                open(record, requestID: requestID, held: held)
            case .close(let code, let reason):
                if let socket {
                    service.logger.info("session.auth_refused", metadata: [
                        "conn": .stringConvertible(socket.socket.id), "code": .stringConvertible(code.rawValue), "reason": "\(reason)",
                    ])
                    service.metrics.handshake(String(code.rawValue))
                }
                socket?.close(code: code, reason: reason)
            case .release(let record):
                service.registeredSession(record, on: loop)?.webSocketAbandoned()
            }
        }
    }

    /// Hands the connection to the session the core registered for it.
    private func open(_ record: SessionRecord, requestID: JSONValue, held: [[UInt8]]) {
        guard let session = service.registeredSession(record, on: loop) else {
            socket?.close(code: .internalError, reason: "ERR_INTERNAL: session unavailable")
            return
        }
        guard let socket else {
            session.webSocketAbandoned()
            return
        }
        socket.handOver(to: session)
        session.webSocketDidOpen(socket)
        service.logger.info("session.authenticated", metadata: ["conn": .stringConvertible(socket.socket.id), "user": "\(record.userID)"])
        session.receive(Request(id: requestID, command: .me))
        for text in held { session.webSocket(socket, didReceiveText: text) }
    }
}
