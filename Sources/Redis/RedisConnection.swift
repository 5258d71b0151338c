import Dispatch
import EventLoop

/// One connection to Redis on one of the gateway's event loops: a `SocketConnection`
/// (plain TCP or verified TLS) carrying RESP2, read with `RESPReader`, the waiting
/// commands kept in a `RedisPipeline`. No thread of its own, no blocking call.
///
/// It is ready once TCP, TLS and the handshake (AUTH, SELECT, CLIENT SETNAME, PING) are
/// done within the connect timeout: `connected` gets nil then, or the reason it failed.
/// After that, `closed` gets the reason it went down (nil: `close()` was called). A
/// command whose reply does not come within the command timeout closes the connection:
/// every waiting command gets `.disconnected`, the subscription too. An idle connection
/// PINGs every keepalive interval, so a server that stopped answering is found out
/// while nothing else is asked.
///
/// Confined to its loop: create it and call every method there; callbacks run there.
/// No reason given to a callback contains the password.
public final class RedisConnection: @unchecked Sendable {
    public let loop: EventLoop
    public let settings: RedisConnectionSettings

    private enum Waiter {
        case caller((RedisReply) -> Void)
        case handshake(String)
        case ready
        case keepalive
    }

    private enum State {
        case connecting
        case handshaking
        case ready
        /// `close()` was called: closes once nothing waits.
        case draining
        case closed
    }

    private var state = State.connecting
    private var socket: SocketConnection?
    private var reader: RESPReader
    private var pipeline = RedisPipeline<Waiter>()
    private var subscription: ((RedisReply) -> Void)?
    private var onConnect: ((String?) -> Void)?
    private var onClose: ((String?) -> Void)?
    /// When this connection last sent something (uptime ns), for the keepalive.
    private var lastSent: UInt64 = 0
    /// The deadline the pending timer check was set for.
    private var checkScheduledFor: UInt64?
    private var handler: SocketEvents?

    /// Starts connecting to `host:port` without credentials (tests). Call on `loop`.
    public convenience init(host: String, port: Int, loop: EventLoop, timeout: DispatchTimeInterval = .seconds(2),
                            connected: @escaping (String?) -> Void, closed: @escaping (String?) -> Void) {
        var connectTimeout = Duration.seconds(2)
        if case .seconds(let seconds) = timeout { connectTimeout = .seconds(seconds) }
        if case .milliseconds(let ms) = timeout { connectTimeout = .milliseconds(ms) }
        self.init(settings: RedisConnectionSettings(endpoint: RedisEndpoint(host: host, port: port),
                                                    connectTimeout: connectTimeout),
                  loop: loop, connected: connected, closed: closed)
    }

    /// Starts connecting as `settings` say. Call on `loop`.
    public init(settings: RedisConnectionSettings, loop: EventLoop,
                connected: @escaping (String?) -> Void, closed: @escaping (String?) -> Void) {
        self.loop = loop
        self.settings = settings
        self.onConnect = connected
        self.onClose = closed
        reader = RESPReader(limits: settings.readerLimits)
        let events = SocketEvents(owner: self)
        handler = events
        do {
            socket = try SocketConnection.connect(host: settings.endpoint.host, port: settings.endpoint.port, loop: loop,
                                                  tls: settings.tls, handler: events)
        } catch {
            terminate("\(peer): \(error)")
            return
        }
        let deadline = DispatchTime.now().uptimeNanoseconds + settings.connectTimeout.nanoseconds
        loop.queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: deadline)) { [weak self] in
            guard let self, state == .connecting || state == .handshaking else { return }
            terminate("\(peer): not ready within \(settings.connectTimeout)"
                      + (state == .connecting && settings.tls != nil ? " (TCP or TLS handshake)" : ""))
        }
    }

    /// `host:port` for reasons: never the URL (it may hold the password).
    private var peer: String { "redis \(settings.endpoint.host):\(settings.endpoint.port)" }

    public var isConnected: Bool { state == .ready }

    /// Whether the oldest command still waiting for its reply was sent more than
    /// `nanoseconds` ago: Redis is slow to answer, though not yet past the command timeout.
    public func isWaiting(longerThan nanoseconds: UInt64) -> Bool {
        guard let deadline = pipeline.nextDeadline else { return false }
        let sent = deadline &- settings.commandTimeoutNanoseconds
        let now = DispatchTime.now().uptimeNanoseconds
        return now > sent && now - sent > nanoseconds
    }

    /// In the reason a connection closed with when a command went unanswered.
    public static let timeoutReason = "no reply within"


    /// Sends one command; `reply` runs on the loop with its reply, or `.disconnected`.
    public func send(_ arguments: [[UInt8]], reply: @escaping (RedisReply) -> Void) {
        guard state == .ready, !pipeline.isSubscribed else {
            reply(.disconnected)
            return
        }
        write(arguments, waiter: .caller(reply))
    }

    public func send(_ arguments: [String], reply: @escaping (RedisReply) -> Void) {
        send(arguments.map { Array($0.utf8) }, reply: reply)
    }

    /// SUBSCRIBE `channels` (`sharded`: SSUBSCRIBE, whose channels must all hash to one
    /// slot): `message` gets the subscription's replies (the confirmations and `["message",
    /// channel, payload]` or `["smessage", channel, payload]` arrays, an error when Redis
    /// refused a whole command), then `.disconnected` once, when the connection goes away.
    /// A subscribed connection takes no other commands.
    public func subscribe(_ channels: [String], sharded: Bool = false, message: @escaping (RedisReply) -> Void) {
        guard state == .ready, subscription == nil else {
            message(.disconnected)
            return
        }
        subscription = message
        transmitSubscription(channels, unsubscribe: false, sharded: sharded)
    }

    /// SUBSCRIBE (`sharded`: SSUBSCRIBE, one slot per call) to more `channels` on a
    /// connection already subscribed (`subscribe`): their confirmations and messages go to
    /// the same handler. Nothing happens when the connection is gone (its handler got
    /// `.disconnected`) or was never subscribed.
    public func subscribe(more channels: [String], sharded: Bool = false) {
        guard state == .ready, subscription != nil, !channels.isEmpty else { return }
        transmitSubscription(channels, unsubscribe: false, sharded: sharded)
    }

    /// UNSUBSCRIBE (`sharded`: SUNSUBSCRIBE, one slot per call) from `channels` (never all
    /// at once: an empty list does nothing); their confirmations go to the subscription's
    /// handler. Messages Redis sent before it took the command still arrive.
    public func unsubscribe(_ channels: [String], sharded: Bool = false) {
        guard state == .ready, subscription != nil, !channels.isEmpty else { return }
        transmitSubscription(channels, unsubscribe: true, sharded: sharded)
    }

    private func transmitSubscription(_ channels: [String], unsubscribe: Bool, sharded: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        let deadline = now + settings.commandTimeout.nanoseconds
        if unsubscribe {
            pipeline.sentUnsubscribe(channels: channels.count, sharded: sharded, deadline: deadline)
        } else {
            pipeline.sentSubscribe(channels: channels.count, sharded: sharded, deadline: deadline)
        }
        let command = (sharded ? "S" : "") + (unsubscribe ? "UNSUBSCRIBE" : "SUBSCRIBE")
        transmit([Array(command.utf8)] + channels.map { Array($0.utf8) }, now: now)
    }

    /// Closes after the replies already asked for have come; `closed` gets nil.
    public func close() {
        switch state {
        case .connecting, .handshaking:
            terminate("\(peer): closed before it was ready")
        case .ready:
            if pipeline.isEmpty || pipeline.isSubscribed {
                terminate(nil)
            } else {
                state = .draining
            }
        case .draining, .closed:
            break
        }
    }

    /// Closes at once, failing whatever waits; `closed` gets `reason`.
    public func abandon(_ reason: String) {
        terminate("\(peer): \(reason)")
    }

    // MARK: socket

    fileprivate func socketConnected() {
        guard state == .connecting else { return }
        state = .handshaking
        let endpoint = settings.endpoint
        if let password = endpoint.password {
            let auth = endpoint.username.map { ["AUTH", $0, password] } ?? ["AUTH", password]
            write(auth.map { Array($0.utf8) }, waiter: .handshake("AUTH"))
        }
        if endpoint.database != 0 {
            write([Array("SELECT".utf8), Array(String(endpoint.database).utf8)], waiter: .handshake("SELECT"))
        }
        if let name = settings.clientName {
            write([Array("CLIENT".utf8), Array("SETNAME".utf8), Array(name.utf8)], waiter: .handshake("CLIENT SETNAME"))
        }
        write([Array("PING".utf8)], waiter: .ready)
    }

    fileprivate func socketRead(_ bytes: UnsafeRawBufferPointer) {
        guard state != .closed else { return }
        reader.append(bytes)
        while state != .closed {
            let reply: RedisReply?
            do throws(RESPReader.Failure) {
                reply = try reader.next()
            } catch {
                terminate("\(peer): bad reply (\(error))")
                return
            }
            guard let reply else { break }
            deliver(reply)
        }
        if state == .draining && pipeline.isEmpty { terminate(nil) }
        scheduleCheck()
    }

    fileprivate func socketClosed() {
        guard state != .closed else { return }
        let before = state == .connecting
            ? (settings.tls != nil ? "connection or TLS handshake failed (refused, or the certificate was not accepted)"
                                   : "connection refused or lost")
            : "connection lost"
        terminate("\(peer): \(before)")
    }

    private func deliver(_ reply: RedisReply) {
        switch pipeline.route(reply) {
        case .subscription:
            subscription?(reply)
        case .unexpected:
            terminate("\(peer): a reply no command asked for")
        case .answer(nil):
            break
        case .answer(.caller(let handler)?):
            handler(reply)
        case .answer(.keepalive?):
            break
        case .answer(.handshake(let step)?):
            if case .error(let message) = reply {
                // Redis's own text (WRONGPASS, NOAUTH, ERR DB index…) never repeats the password.
                terminate("\(peer): \(step) refused: \(message)")
            }
        case .answer(.ready?):
            guard state == .handshaking else { return }
            if case .error(let message) = reply {
                terminate("\(peer): PING refused: \(message)")
                return
            }
            state = .ready
            let callback = onConnect
            onConnect = nil
            callback?(nil)
        }
    }

    private func write(_ arguments: [[UInt8]], waiter: Waiter) {
        let now = DispatchTime.now().uptimeNanoseconds
        pipeline.sent(waiter, deadline: now + settings.commandTimeout.nanoseconds)
        transmit(arguments, now: now)
    }

    private func transmit(_ arguments: [[UInt8]], now: UInt64) {
        lastSent = now
        socket?.write(RESPCommand.encode(arguments))
        scheduleCheck()
    }

    // MARK: deadlines

    /// The next moment something is due: the oldest command's deadline, or the keepalive.
    private func scheduleCheck() {
        guard state == .ready || state == .draining || state == .handshaking else { return }
        let due = pipeline.nextDeadline ?? (lastSent + settings.keepaliveInterval.nanoseconds)
        if let scheduled = checkScheduledFor, scheduled <= due { return }
        checkScheduledFor = due
        loop.queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due)) { [weak self] in
            guard let self else { return }
            if checkScheduledFor == due { checkScheduledFor = nil }
            check()
        }
    }

    private func check() {
        guard state != .closed, state != .connecting else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        if pipeline.isOverdue(now: now) {
            terminate("\(peer): \(Self.timeoutReason) \(settings.commandTimeout)")
            return
        }
        if state == .ready && pipeline.isEmpty && now >= lastSent + settings.keepaliveInterval.nanoseconds {
            write([Array("PING".utf8)], waiter: .keepalive)
        }
        scheduleCheck()
    }

    // MARK: ending

    private func terminate(_ reason: String?) {
        guard state != .closed else { return }
        let wasReady = state == .ready || state == .draining
        state = .closed
        let socket = self.socket
        self.socket = nil
        if reason == nil { socket?.close() } else { socket?.closeNow() }
        socket?.handler = nil
        handler = nil
        for waiter in pipeline.removeAll() {
            if case .caller(let reply) = waiter { reply(.disconnected) }
        }
        let subscription = self.subscription
        self.subscription = nil
        subscription?(.disconnected)
        if wasReady {
            let callback = onClose
            onClose = nil
            onConnect = nil
            callback?(reason)
        } else {
            let callback = onConnect
            onConnect = nil
            onClose = nil
            callback?(reason ?? "\(peer): closed")
        }
    }
}

/// The socket's events for one `RedisConnection`. The socket holds it and it holds the
/// connection, so a connection lives while its socket does, whoever else keeps it; the
/// cycle ends when the connection ends (`terminate`).
private final class SocketEvents: ConnectionHandler {
    let owner: RedisConnection

    init(owner: RedisConnection) {
        self.owner = owner
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        owner.socketRead(bytes)
    }

    func connectionDidConnect(_ connection: SocketConnection) {
        owner.socketConnected()
    }

    func connectionDidClose(_ connection: SocketConnection) {
        owner.socketClosed()
    }
}
