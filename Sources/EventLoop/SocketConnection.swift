import CEpoll
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection (optionally TLS) owned by an event loop: its socket in the
/// loop's epoll set (watched for writable only while it pushes back, for readable
/// unless reading is paused), a write queue flushed once per loop turn with `writev`,
/// and the `OutputBound` that judges a peer too slow to keep.
public final class SocketConnection: @unchecked Sendable {
    public enum State: Sendable, Equatable {
        case connecting
        case open
        /// Flushing what is queued, then half-closing and waiting for the peer's FIN.
        case closing
        case closed
    }

    public let loop: EventLoop
    public let id: UInt64
    public var handler: (any ConnectionHandler)?
    public private(set) var state: State
    /// The loop tick of the last read, for idle detection.
    public private(set) var lastReadTick: UInt64
    /// The loop tick at which the connection entered `connecting` or `closing`: both are
    /// bounded (`connectTimeoutTicks`, `closeTimeoutTicks`).
    private var stateSinceTick: UInt64 = 0
    /// A client connect not finished after this many sweeps (seconds) is given up.
    public var connectTimeoutTicks: UInt64 = 10
    public var closeTimeoutTicks: UInt64 = 5
    /// How much unsent output the peer may leave, and for how long (every writer counts:
    /// HTTP replies, WebSocket frames, pongs, close frames).
    public var outputBound = OutputBound.unbounded
    /// Whether `connectionDidDrain` is called when the queue empties.
    public var notifiesWhenDrained = false

    private let fd: Int32
    private var watchingWritable = false
    private var readingPaused = false
    private var queue = WriteQueue()
    private var plaintext = WriteQueue()
    private var tls: TLSSession?
    private var flushPending = false
    private var shutdownSent = false
    private var isServerSide = true
    /// Accepted and waiting for a turn of the loop's `HandshakeAdmission`: its opening bytes
    /// are still arriving, or are ready and queued.
    public private(set) var waitingForTurn = false
    private var holdsHandshakeTurn = false
    /// What the peer sent before its turn (server side), handed to the handshake when it starts.
    private var opening: HandshakeOpening?

    private static let nextID = Atomic<UInt64>(1)

    init(fd: Int32, loop: EventLoop, state: State) {
        self.fd = fd
        self.loop = loop
        self.state = state
        self.lastReadTick = loop.tick
        id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Bytes queued and not yet accepted by the kernel: the backpressure signal.
    public var queuedByteCount: Int { queue.byteCount + plaintext.byteCount }

    public var isTLS: Bool { tls != nil }

    /// A client's TLS session to offer on its next connection (`connect(…, session:)`), once
    /// the server's ticket arrived: TLS 1.3 sends it after the handshake, ahead of the first
    /// bytes the server writes. Nil before, without TLS, when the server gives no tickets,
    /// and once the connection is released (in `connectionDidClose`).
    public var resumableTLSSession: TLSResumableSession? { tls?.resumableSession() }

    /// Whether the server resumed the session this client offered (no full handshake).
    public var isTLSResumed: Bool { tls?.isResumed ?? false }

    // MARK: starting

    /// Adopts an accepted socket on `loop` (call on the loop). Its first bytes are read and
    /// held (`HandshakeOpening`) until they are a complete TLS record (with `tls`) or HTTP
    /// request head; only then does it ask for a turn of the loop's `HandshakeAdmission`,
    /// bounded by `handshakesAtOnce` (0: unbounded). When the turn comes, the handler hears
    /// `connectionMayStart`, then the held bytes. A connection that never sends enough never
    /// holds a turn; its handler's handshake timeout closes it. The turn ends with
    /// `finishHandshakeTurn()` or when the connection closes.
    public static func accepted(
        fd: Int32, loop: EventLoop, tls: TLSContext?, handler: any ConnectionHandler, handshakesAtOnce: Int = 0
    ) -> SocketConnection? {
        let connection = SocketConnection(fd: fd, loop: loop, state: .open)
        connection.handler = handler
        if let tls {
            guard let session = try? TLSSession(context: tls, output: connection) else {
                Glibc.close(fd)
                return nil
            }
            connection.tls = session
        }
        loop.register(connection)
        loop.handshakeAdmission.limit = handshakesAtOnce
        connection.opening = HandshakeOpening(expecting: tls == nil ? .httpRequestHead : .tlsRecord)
        connection.waitingForTurn = true
        loop.watch(fd: fd, of: connection, .read)
        return connection
    }

    /// Bytes read before the turn: held; once they are enough, reading stops (what follows
    /// waits in the kernel) and the connection asks for its turn.
    private func holdOpening(_ bytes: UnsafeRawBufferPointer) {
        guard var held = opening else { return }
        let wasReady = held.isReady
        opening = nil  // appended in place, not copied
        let ready = held.append(bytes)
        opening = held
        guard ready, !wasReady else { return }
        updateInterest()  // a ready opening is not read further
        if loop.handshakeAdmission.arrive(self) { startHandshakeTurn() }
    }

    private func startHandshakeTurn() {
        waitingForTurn = false
        holdsHandshakeTurn = true
        handler?.connectionMayStart(self)
        // The held bytes go first, on the loop's next pass rather than inside the call that
        // ended another connection's turn; reading resumes after them, keeping the order.
        loop.execute { [self] in
            guard state == .open, let held = opening else { return }
            opening = nil
            if !held.bytes.isEmpty { held.bytes.withUnsafeBytes { deliver($0) } }
            if state != .closed { updateInterest() }
        }
    }

    /// The opening handshake is over (or no longer worth the turn): the loop's next waiting
    /// connection starts. Closing ends the turn as well.
    public func finishHandshakeTurn() {
        guard holdsHandshakeTurn else { return }
        holdsHandshakeTurn = false
        var next = loop.handshakeAdmission.release()
        while let connection = next {
            if connection.state == .open && connection.waitingForTurn {
                connection.startHandshakeTurn()
                return
            }
            next = loop.handshakeAdmission.release()  // it left while waiting: pass the turn on
        }
    }

    /// Connects to host:port (client side, for tests and the load tool). The handler
    /// hears `connectionDidConnect` once TCP (and TLS) is up. With TLS, `session` (the
    /// `resumableTLSSession` of an earlier connection) is offered for resumption.
    public static func connect(
        host: String, port: Int, loop: EventLoop, tls: TLSContext?, session: TLSResumableSession? = nil,
        handler: any ConnectionHandler
    ) throws -> SocketConnection {
        let fd = try Socket.startConnect(host: host, port: port)
        let connection = SocketConnection(fd: fd, loop: loop, state: .connecting)
        connection.handler = handler
        if let tls {
            connection.tls = try TLSSession(context: tls, output: connection, serverName: host, resuming: session)
        }
        loop.execute {
            connection.stateSinceTick = loop.tick
            loop.register(connection)
            guard connection.state == .connecting else { return }
            connection.watchingWritable = true
            loop.watch(fd: fd, of: connection, .readWrite)
        }
        return connection
    }

    private func watchWritable() {
        guard !watchingWritable, state != .closed else { return }
        watchingWritable = true
        updateInterest()
    }

    private func stopWatchingWritable() {
        guard watchingWritable, state != .closed else { return }
        watchingWritable = false
        updateInterest()
    }

    private func updateInterest() {
        loop.change(fd: fd, of: self, to: EventLoop.Interest(reading: readsSocket, writing: watchingWritable))
    }

    /// Whether the socket is read: not while the handler paused reading, nor while an opening
    /// that is ready waits for its turn (what follows it stays in the kernel until then).
    private var readsSocket: Bool { !readingPaused && !(opening?.isReady ?? false) }

    /// Stops reading from the socket (the peer's bytes wait in the kernel, which in time
    /// stops the peer): a handler that cannot take more input until its output drains.
    public func pauseReading() {
        guard !readingPaused, state != .closed, state != .connecting else { return }
        readingPaused = true
        updateInterest()
    }

    public func resumeReading() {
        guard readingPaused, state != .closed else { return }
        readingPaused = false
        updateInterest()
    }

    /// One epoll event for this socket (level-triggered: what is left unread reports again).
    func handleReadiness(_ events: UInt32) {
        let failed = events & (CEPOLL_ERR | CEPOLL_HUP) != 0
        if state == .connecting {
            // A refused or failed connect reports an error, often before writable: settle it
            // here, or the level-triggered event would keep firing on the pending error.
            if failed || events & CEPOLL_OUT != 0 { writable() }
            guard state != .connecting else { return }
        }
        if failed && waitingForTurn {
            closeNow()  // the client left before its turn: nothing of it is worth reading
            return
        }
        if state != .closed && (failed || (events & CEPOLL_IN != 0 && readsSocket)) { readAvailable() }
        if state != .closed && watchingWritable && events & CEPOLL_OUT != 0 { writable() }
    }

    // MARK: reading

    private func readAvailable() {
        let buffer = loop.readBuffer
        for _ in 0..<4 {
            let capacity = min(opening?.readLimit ?? buffer.count, buffer.count)
            let n = read(fd, buffer.baseAddress, capacity)
            if n > 0 {
                lastReadTick = loop.tick
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<n])
                if opening != nil { holdOpening(bytes) } else { deliver(bytes) }
                if state == .closed || n < capacity || !readsSocket { return }
            } else if n == 0 {
                peerClosed()
                return
            } else {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
                closeNow()
                return
            }
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        if state == .closing && shutdownSent { return }  // draining the peer's last bytes
        guard let tls else {
            handler?.connection(self, didRead: bytes)
            return
        }
        let wasComplete = tls.isHandshakeComplete
        let result = tls.receive(bytes, into: loop.plaintextBuffer) { plain in
            if state != .closed { handler?.connection(self, didRead: plain) }
        }
        if !wasComplete && tls.isHandshakeComplete && !isServerSide {
            handler?.connectionDidConnect(self)
        }
        scheduleFlushIfNeeded()
        switch result {
        case .ok: break
        case .closed: peerClosed()
        case .failed: closeNow()
        }
    }

    /// EOF from the peer: nothing more will come, so the socket is released.
    private func peerClosed() {
        closeNow()
    }

    // MARK: writing

    /// Queues bytes; they go out at the end of the current loop turn.
    public func write(_ bytes: [UInt8]) {
        guard state == .open || state == .connecting || (state == .closing && !shutdownSent) else { return }
        if tls != nil {
            plaintext.append(bytes)
        } else {
            queue.append(bytes)
        }
        scheduleFlushIfNeeded()
        if outputBound.queued(unsent: queuedByteCount, pushingBack: watchingWritable) {
            handler?.connectionIsSlow(self)
        }
    }

    /// Queues bytes and writes them at once, in a system call of their own (with whatever
    /// was still queued before them), as a client that writes each message when it is
    /// made does; `write(_:)` gathers a turn's bytes into one write instead.
    public func writeNow(_ bytes: [UInt8]) {
        write(bytes)
        guard state == .open, !watchingWritable else { return }
        flush()
    }

    private func scheduleFlushIfNeeded() {
        guard !flushPending, state != .closed, state != .connecting else { return }
        guard !queue.isEmpty || !plaintext.isEmpty else { return }
        flushPending = true
        loop.scheduleFlush(self)
    }

    func flushScheduledWrites() {
        flushPending = false
        flush()
    }

    private func flush() {
        guard state != .closed, state != .connecting else { return }
        if let tls, tls.isHandshakeComplete, !plaintext.isEmpty {
            var ok = true
            plaintext.takeAll { chunk in
                if ok { ok = tls.send(chunk) }
            }
            if !ok {
                closeNow()
                return
            }
        }
        switch queue.flush(to: fd) {
        case .drained:
            outputBound.drained()
            if watchingWritable { stopWatchingWritable() }
            if state == .closing && plaintext.isEmpty { finishClosing() }
            if notifiesWhenDrained && state == .open && plaintext.isEmpty { handler?.connectionDidDrain(self) }
        case .wouldBlock:
            outputBound.kernelRefused(unsent: queuedByteCount, tick: loop.tick)
            watchWritable()
        case .failed:
            closeNow()
        }
    }

    private func writable() {
        if state == .connecting {
            let error = Socket.pendingError(fd)
            guard error == 0 else {
                closeNow()
                return
            }
            state = .open
            isServerSide = false
            stopWatchingWritable()
            if let tls {
                _ = tls.startHandshake()
            } else {
                handler?.connectionDidConnect(self)
            }
            scheduleFlushIfNeeded()
            return
        }
        flush()
    }

    // MARK: closing

    /// Flushes what is queued, sends TLS close_notify and a FIN, then waits
    /// (bounded by `closeTimeoutTicks`) for the peer to close before releasing the socket.
    public func close() {
        guard state == .open || state == .connecting else { return }
        state = .closing
        stateSinceTick = loop.tick
        flushPending = false
        flush()
    }

    private func finishClosing() {
        guard !shutdownSent else { return }
        shutdownSent = true
        if let tls {
            tls.shutdown()
            _ = queue.flush(to: fd)
        }
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Releases the socket at once, dropping anything unsent.
    public func closeNow() {
        guard state != .closed else { return }
        state = .closed
        queue.removeAll()
        plaintext.removeAll()
        watchingWritable = false
        loop.forget(fd: fd)
        // Released on a later turn, as callers up the stack may still be using the connection.
        loop.execute { [self] in release() }
    }

    private func release() {
        Glibc.close(fd)
        loop.unregister(self)
        waitingForTurn = false
        opening = nil
        finishHandshakeTurn()
        let handler = self.handler
        self.handler = nil
        tls = nil
        handler?.connectionDidClose(self)
    }

    func sweep(tick: UInt64) {
        if state == .open && outputBound.sweep(tick: tick) {
            handler?.connectionIsSlow(self)
        }
        if state == .closing && tick >= stateSinceTick + closeTimeoutTicks {
            closeNow()
        } else if state == .connecting && tick >= stateSinceTick + connectTimeoutTicks {
            closeNow()
        }
    }
}

extension SocketConnection {
    func tlsDidProduce(_ ciphertext: UnsafeRawBufferPointer) {
        queue.append(Array(ciphertext))
    }
}
