import ChatCore
import EventLoop
import WebSocket

/// One authenticated `/v1/ws` connection: decodes requests on its loop, hands
/// them to the service, and writes replies and events. Lives on its loop.
final class ChatSession: WebSocketApplication {
    let userID: UserID
    let userNumber: UserNumber
    let device: String?
    let hideBlocked: Bool
    let expiresAt: Milliseconds
    let loop: EventLoop
    private let service: ChatService
    /// Strong while open (a weak load per delivery costs an atomic); released when the
    /// connection closes, which breaks the channel ↔ session cycle.
    private(set) var socket: WebSocketChannel?
    /// Channels this session receives (kept by its hub shard).
    var channels: Set<ChannelID> = []
    /// Users this user blocked, and users who blocked it: kept current by the hub
    /// shard before any block request is answered.
    var blocked: Set<UserNumber> = []
    var blockedBy: Set<UserNumber> = []
    private var expiringSent = false

    init(userID: UserID, userNumber: UserNumber, device: String?, hideBlocked: Bool, expiresAt: Milliseconds,
         loop: EventLoop, service: ChatService) {
        self.userID = userID
        self.userNumber = userNumber
        self.device = device
        self.hideBlocked = hideBlocked
        self.expiresAt = expiresAt
        self.loop = loop
        self.service = service
    }

    var userForLogs: String? { userID }

    func webSocketDidOpen(_ socket: WebSocketChannel) {
        self.socket = socket
    }

    func webSocket(_ socket: WebSocketChannel, didReceiveText bytes: [UInt8]) {
        switch RequestDecoder.decode(bytes) {
        case .success(let request):
            service.handle(request, from: self)
        case .failure(let failure):
            send(WireEncoding.error(id: failure.id, failure.error))
        }
    }

    func webSocket(_ socket: WebSocketChannel, didReceiveBinary bytes: [UInt8]) {
        socket.close(code: .unsupportedData, reason: "binary messages are not accepted")
    }

    func webSocketDidClose(_ socket: WebSocketChannel) {
        self.socket = nil
        service.sessionClosed(self)
    }

    func webSocketAbandoned() {
        service.sessionClosed(self)
    }

    /// `session.expiring` 60 s before the token's `exp`, close 4001 at `exp`.
    func webSocketTick(_ socket: WebSocketChannel) {
        let now = service.clock.now()
        if now >= expiresAt {
            socket.close(code: .tokenExpired, reason: "token expired")
        } else if !expiringSent && now >= expiresAt - 60_000 {
            expiringSent = true
            send(WireEncoding.event("session.expiring") { w in
                w.beginObject()
                w.key("expiresAt"); w.int(expiresAt)
                w.endObject()
            })
        }
    }

    /// Writes a reply or a per-session event (call on the loop).
    func send(_ json: [UInt8]) {
        guard let socket else { return }
        socket.send(text: json)
        closeIfSlow(socket)
    }

    /// Queues a shared event (call on the loop).
    func deliver(_ event: SharedEvent) {
        guard let socket else { return }
        socket.send(shared: event.payload, frame: event.frame, compressed: event.compressedFrame(windowBits:))
        closeIfSlow(socket)
    }

    /// A connection whose unsent output passed the bound is closed as a slow
    /// consumer (4000): it stops growing, and nobody else waits for it.
    private func closeIfSlow(_ socket: WebSocketChannel) {
        let queued = socket.socket.queuedByteCount
        guard queued > service.maxQueuedOutputBytes, socket.isOpen else { return }
        service.metrics.slowConsumerCloses.increment()
        service.logger.warning("connection.slow_consumer", metadata: [
            "conn": "\(socket.socket.id)", "user": "\(userID)", "queuedBytes": "\(queued)",
        ])
        socket.close(code: .slowConsumer, reason: "slow consumer")
    }

    /// Closes with `code` (deactivation, shutdown).
    func close(code: CloseCode, reason: String) {
        socket?.close(code: code, reason: reason)
    }
}
