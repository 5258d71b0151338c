import Dispatch
import EventLoop
import WebSocket
import WebSocketDriver

/// A storm participant's WebSocket, on one loop: TCP and TLS, offering the session of its
/// last connection when it kept one, then the upgrade with its token. A failed attempt
/// (refused, reset, closed or timed out before the 101, an HTTP error) is tried again after
/// a jittered backoff until the phase's deadline, as a real client would. Once open, text
/// messages go to `received`; the subclass decides what they mean.
class StormConnection: ConnectionHandler, @unchecked Sendable {
    enum State {
        case idle, connecting, upgrading, open, closed
    }

    /// An attempt without its 101 by then is given up and tried again.
    static let attemptTimeoutSeconds = 30

    let loop: EventLoop
    let address: GatewayAddress
    let tls: TLSContext?
    private let token: String
    private(set) var state = State.idle
    private(set) var connection: SocketConnection?
    /// Offered on the next connect; nil means a full handshake.
    var session: TLSResumableSession?
    /// Whether the server resumed the session on the current connection.
    private(set) var resumed = false
    /// The current attempt's WebSocket.
    private var webSocket: WebSocketClientConnection?
    private var connectPhase: StormPhase?
    private var dropPhase: StormPhase?
    private var attempts = 0
    /// Counts attempts, so a timeout armed for one does not fire on the next.
    private var generation = 0

    init(loop: EventLoop, address: GatewayAddress, tls: TLSContext?, token: String) {
        self.loop = loop
        self.address = address
        self.tls = tls
        self.token = token
    }

    // MARK: for subclasses

    /// A text message on the open WebSocket.
    func received(_ frame: StormFrame) {}

    /// The open connection ended without this side asking (gateway close, reset).
    func lost(_ reason: String) {}

    /// Sends one text message (dropped unless open).
    func send(_ json: String) {
        guard state == .open, let connection, let webSocket else { return }
        webSocket.send(text: Array(json.utf8), on: connection)
    }

    // MARK: connecting

    /// Connects (call on the loop); `phase` hears once whether it succeeded.
    func connect(in phase: StormPhase) {
        connectPhase = phase
        attempts = 0
        attempt()
    }

    private func attempt() {
        attempts += 1
        generation += 1
        state = .connecting
        resumed = false
        webSocket = WebSocketClientConnection(handshake: address.upgrade(token: token), maxMessageBytes: 4 << 20)
        do {
            connection = try SocketConnection.connect(host: address.host, port: address.port, loop: loop, tls: tls,
                                                      session: session, handler: self)
        } catch {
            failAttempt("connect: \(error)")
            return
        }
        let armed = generation
        loop.queue.asyncAfter(deadline: .now() + .seconds(Self.attemptTimeoutSeconds)) { [self] in
            guard generation == armed, state == .connecting || state == .upgrading else { return }
            failAttempt("no 101 within \(Self.attemptTimeoutSeconds) s")
        }
    }

    /// Closes what is left of the attempt and tries again after a backoff (100 ms doubling
    /// to 2 s, ±50 %), or gives up at the phase's deadline.
    private func failAttempt(_ reason: String) {
        guard let phase = connectPhase else { return }
        phase.noteFailure(reason)
        let stale = connection
        connection = nil
        state = .idle
        stale?.closeNow()
        let backoff = min(2.0, 0.1 * Double(1 << min(attempts - 1, 5))) * Double.random(in: 0.5...1.5)
        guard MonotonicClock.now() + MonotonicClock.nanoseconds(backoff) < phase.deadline else {
            state = .closed
            connectPhase = nil
            phase.finish(ok: false)
            return
        }
        phase.retries.add(1, ordering: .relaxed)
        loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(backoff * 1e9))) { [self] in attempt() }
    }

    func connectionDidConnect(_ connection: SocketConnection) {
        guard connection === self.connection else { return }
        state = .upgrading
        webSocket?.start(on: connection)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard connection === self.connection, state == .upgrading || state == .open, let webSocket else { return }
        webSocket.receive(bytes, on: connection) { event in
            switch event {
            case .opened:
                opened(on: connection)
            case .refused(let refusal):
                failAttempt("\(refusal)")
            case .text(let payload):
                if state == .open { received(StormFrame(payload)) }
            case .ended(.closed(let code, let reason)):
                guard state == .open else { break }
                state = .closed
                lost("close \(code?.rawValue ?? 1005) \(reason)")
            case .ended(.failed(let error)):
                guard state == .open else { break }
                state = .closed
                lost("protocol error: \(error)")
            case .ended(.pingTimeout), .binary:
                break
            }
        }
    }

    func connectionDidClose(_ connection: SocketConnection) {
        guard connection === self.connection else { return }
        self.connection = nil
        switch state {
        case .connecting: failAttempt("closed or refused before TLS was up")
        case .upgrading: failAttempt("closed during the upgrade")
        case .open:
            state = .closed
            lost("closed by the gateway")
        case .closed:
            if let dropPhase {
                self.dropPhase = nil
                dropPhase.finish(ok: true)
            }
        case .idle: break
        }
    }

    private func opened(on connection: SocketConnection) {
        state = .open
        resumed = connection.isTLSResumed
        if let phase = connectPhase {
            connectPhase = nil
            if resumed { phase.resumed.add(1, ordering: .relaxed) }
            phase.finish(ok: true)
        }
    }

    // MARK: ending

    /// Drops the connection as a network failure would: the socket closed at once, no
    /// WebSocket close, no TLS close_notify. Keeps the TLS session for the next connect
    /// when `keepSession`; `phase` hears when the socket is released.
    func drop(keepSession: Bool, in phase: StormPhase) {
        guard state == .open, let connection else {
            phase.finish(ok: false)
            return
        }
        session = keepSession ? connection.resumableTLSSession : nil
        state = .closed
        dropPhase = phase
        connection.closeNow()
    }

    /// A normal close (1000) at the end of the run.
    func close() {
        guard state == .open, let connection, let webSocket else { return }
        state = .closed
        webSocket.close(code: .normal, on: connection)
    }
}
