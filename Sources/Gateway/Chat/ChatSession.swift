import ChatCore
import EventLoop
import WebSocket
import WebSocketDriver

/// One authenticated `/v1/ws` connection: decodes requests on its loop, hands
/// them to the service, and writes replies and events. Lives on its loop.
final class ChatSession: WebSocketApplication {
    let record: SessionRecord
    var id: SessionID { record.id }
    var userID: UserID { record.userID }
    var userNumber: UserNumber { record.userNumber }
    var hideBlocked: Bool { record.hideBlocked }
    var expiresAt: Milliseconds { record.expiresAt }
    let loop: EventLoop
    private let service: ChatService
    /// Strong while open (a weak load per delivery costs an atomic); released when the
    /// connection closes, which breaks the connection ↔ session cycle.
    private(set) var socket: WebSocketServerConnection?
    /// `socket` without its reference count, for the fan-out: the strong `socket` keeps it
    /// alive, and both are cleared together.
    private var socketForFanOut: Unmanaged<WebSocketServerConnection>?
    /// Channels this session receives (kept by its hub shard).
    var channels: Set<ChannelID> = []
    /// Users this user blocked, and users who blocked it: kept current by the hub
    /// shard before any block request is answered.
    var blocked: Set<UserNumber> = []
    var blockedBy: Set<UserNumber> = []
    private var expiringSent = false
    private var budget: RequestBudget

    /// Made on its loop by the hub shard when the core registers the session.
    init(record: SessionRecord, loop: EventLoop, service: ChatService) {
        self.record = record
        self.loop = loop
        self.service = service
        budget = RequestBudget(ratePerSecond: service.limits.connectionRequestsPerSecond,
                               burst: service.limits.connectionRequestBurst,
                               maxInFlight: service.limits.maxRequestsInFlight)
    }

    var userForLogs: String? { userID }

    func webSocketDidOpen(_ socket: WebSocketServerConnection) {
        self.socket = socket
        socketForFanOut = Unmanaged.passUnretained(socket)
    }

    func webSocket(_ socket: WebSocketServerConnection, didReceiveText bytes: [UInt8]) {
        switch RequestDecoder.decode(bytes) {
        case .success(let request):
            receive(request)
        case .failure(let failure):
            if failure.error.code == .unknownType, case .auth = AuthRequest.read(bytes) {
                // PROTOCOL.md §1: `auth` opens a `?auth=message` connection's session; a
                // connection has one user for its whole life, so a later `auth` changes nothing.
                send(WireEncoding.error(id: failure.id, ChatError(
                    .badRequest, "already authenticated: auth is only the first message of a connection")))
                return
            }
            send(WireEncoding.error(id: failure.id, failure.error))
        }
    }

    /// A decoded request, within this connection's budget (the `auth` request that opened
    /// the session comes here as `me`).
    func receive(_ request: Request) {
        switch budget.admit(now: service.clock.monotonicNow()) {
        case .admitted:
            service.handle(request, from: record)
        case .limited(let retryAfterMs):
            service.metrics.requestsRefusedByRate.increment()
            send(WireEncoding.error(id: request.id, ChatError(
                .rateLimited, "over this connection's request budget", retryAfterMs: retryAfterMs)))
        case .tooManyInFlight:
            service.metrics.requestsRefusedInFlight.increment()
            send(WireEncoding.error(id: request.id, ChatError(
                .rateLimited, "\(budget.maxInFlight) requests of this connection are still in flight", retryAfterMs: 10)))
        }
    }

    func webSocket(_ socket: WebSocketServerConnection, didReceiveBinary bytes: [UInt8]) {
        socket.close(code: .unsupportedData, reason: "binary messages are not accepted")
    }

    func webSocketDidClose(_ socket: WebSocketServerConnection) {
        socketForFanOut = nil
        self.socket = nil
        service.sessionClosed(self)
    }

    func webSocketAbandoned() {
        service.sessionClosed(self)
    }

    /// `session.expiring` 60 s before the token's `exp`, close 4001 at `exp`.
    func webSocketTick(_ socket: WebSocketServerConnection) {
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
    /// The socket's `OutputBound` closes a reader too slow for what it is sent (4000).
    func send(_ json: [UInt8]) {
        socket?.send(text: json)
    }

    /// The answer to a request the budget admitted (call on the loop).
    func sendReply(_ json: [UInt8]) {
        budget.answered()
        socket?.send(text: json)
    }

    /// Queues a shared event (call on the loop).
    func deliver(_ event: SharedEvent) {
        socketForFanOut?._withUnsafeGuaranteedRef { $0.send(event.message) }
    }

    /// Closes with `code` (deactivation, shutdown).
    func close(code: CloseCode, reason: String) {
        socket?.close(code: code, reason: reason)
    }
}
