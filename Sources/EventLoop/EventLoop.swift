import CEpoll
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One serial DispatchQueue that owns a set of connections: their sockets,
/// their write queues and one shared read buffer. Everything a connection
/// does happens on its loop, so nothing on the I/O path takes a lock.
///
/// The loop's sockets sit in one epoll set of its own (level-triggered), and
/// only that set is a Dispatch read source: a per-socket Dispatch source
/// re-arms with an `epoll_ctl` per event, which cost more than the read itself.
public final class EventLoop: @unchecked Sendable {
    public let index: Int
    public let queue: DispatchQueue
    private let inbox: BatchingQueue
    /// Shared by every connection of the loop: reads land here and are consumed before the next read.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Decrypted TLS bytes, consumed the same way.
    let plaintextBuffer: UnsafeMutableRawBufferPointer
    /// Seconds since the loop started, advanced by the sweep.
    public private(set) var tick: UInt64 = 0
    /// Unsent output of all its connections, summed by the last sweep.
    public private(set) var queuedOutputBytes = 0
    /// Runs on the loop after every sweep (once a second); set it on the loop.
    public var sweepObserver: (@Sendable (EventLoop) -> Void)?

    private var connections: [UInt64: SocketConnection] = [:]
    /// Descriptors polled for a client library (hiredis) instead of a connection, by token.
    private var watchers: [UInt64: (UInt32) -> Void] = [:]
    private var nextWatcherToken: UInt64 = EventLoop.watcherTokenBit
    /// Set in watcher tokens, never in connection ids (a counter from 1).
    private static let watcherTokenBit: UInt64 = 1 << 63
    /// Accepted connections in their opening handshake, and those waiting for a turn.
    var handshakeAdmission = HandshakeAdmission<SocketConnection>()
    /// Input this loop's connections hold while what they wait for is decided elsewhere.
    public var heldInput = HeldInputBudget()
    private let poller: Int32
    private var pollSource: DispatchSourceRead?
    private let readyEvents: UnsafeMutablePointer<cepoll_ready>
    private static let readyEventCapacity: Int32 = 512
    private var pendingFlush: [SocketConnection] = []
    /// The batch being flushed; swapped with `pendingFlush` so both keep their storage.
    private var flushing: [SocketConnection] = []
    private var flushScheduled = false
    /// When the last flush pass ended and how long it took (monotonic ns): the next
    /// pass waits at least that long, so flushing takes at most half the loop.
    private var lastFlushEnd: UInt64 = 0
    private var lastFlushDuration: UInt64 = 0
    /// The longest a flush pass is deferred, whatever the previous one cost.
    static let maximumFlushDelay: UInt64 = 5_000_000
    private var sweepTimer: DispatchSourceTimer?
    private let key = DispatchSpecificKey<Int>()
    /// Set by `stop()`: no socket is polled and no connection is left (read on the loop).
    public private(set) var isStopped = false

    let reclaimer: MemoryReclaimer?

    public convenience init(index: Int, readBufferSize: Int = 256 * 1024) {
        self.init(index: index, readBufferSize: readBufferSize, reclaimer: nil)
    }

    init(index: Int, readBufferSize: Int = 256 * 1024, reclaimer: MemoryReclaimer?) {
        self.index = index
        self.reclaimer = reclaimer
        queue = DispatchQueue(label: "chat-gateway.loop.\(index)")
        inbox = BatchingQueue(queue: queue)
        readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)
        plaintextBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        poller = cepoll_create()
        precondition(poller >= 0, "epoll_create1 failed: errno \(errno)")
        readyEvents = .allocate(capacity: Int(Self.readyEventCapacity))
        queue.setSpecific(key: key, value: index)
        let source = DispatchSource.makeReadSource(fileDescriptor: poller, queue: queue)
        // Handlers hold the loop weakly: its last reference may go on another thread (a
        // stopped gateway) while an event is already queued, and an unowned one would abort.
        source.setEventHandler { [weak self] in self?.dispatchReadyEvents() }
        // Closed only once Dispatch has let go of it, never under a live source.
        source.setCancelHandler { [poller] in _ = Glibc.close(poller) }
        source.resume()
        pollSource = source
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.sweep() }
        timer.resume()
        sweepTimer = timer
    }

    deinit {
        sweepTimer?.cancel()
        pollSource?.cancel()
        readyEvents.deallocate()
        readBuffer.deallocate()
        plaintextBuffer.deallocate()
    }

    public var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == index }

    /// Runs `work` on the loop; work from other threads arrives in bursts (see `BatchingQueue`).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        inbox.async(work)
    }

    /// Live connections on this loop (read on the loop).
    public var connectionCount: Int { connections.count }

    /// Stops the loop for good (process exit): drops its connections, waits until what
    /// they held (TLS sessions among it) is released, and stops polling and sweeping.
    /// Afterwards no work of the loop calls into OpenSSL, so libcrypto's exit handlers
    /// cannot run under it. Call from outside the loop.
    public func stop() {
        precondition(!isCurrent, "EventLoop.stop() waits for the loop and cannot run on it")
        queue.sync { for connection in Array(connections.values) { connection.closeNow() } }
        // Each closeNow releases its socket on a later turn: let those turns run.
        for _ in 0..<8 where queue.sync(execute: { !connections.isEmpty }) {}
        queue.sync {
            pollSource?.cancel()
            pollSource = nil
            sweepTimer?.cancel()
            sweepTimer = nil
            isStopped = true
        }
    }

    /// Every live connection (read on the loop).
    public var liveConnections: some Collection<SocketConnection> { connections.values }

    /// The live connection with this id (call on the loop): how work that left the loop
    /// finds its connection again, or learns that it is gone.
    public func connection(_ id: UInt64) -> SocketConnection? { connections[id] }

    func register(_ connection: SocketConnection) {
        connections[connection.id] = connection
        reclaimer?.connectionChurned()
    }

    func unregister(_ connection: SocketConnection) {
        connections[connection.id] = nil
        reclaimer?.connectionChurned()
    }

    // MARK: readiness

    /// What a connection wants to hear about: readable unless it paused reading, writable
    /// while its socket pushes back. Errors and hang-ups are reported whatever the interest.
    enum Interest {
        case read
        case readWrite
        case write
        case none

        init(reading: Bool, writing: Bool) {
            switch (reading, writing) {
            case (true, false): self = .read
            case (true, true): self = .readWrite
            case (false, true): self = .write
            case (false, false): self = .none
            }
        }

        var events: UInt32 {
            switch self {
            case .read: CEPOLL_IN
            case .readWrite: CEPOLL_IN | CEPOLL_OUT
            case .write: CEPOLL_OUT
            case .none: 0
            }
        }
    }

    /// Adds a registered connection's socket to the loop's epoll set; events carry its id,
    /// so an event for a connection closed earlier in the same batch finds nothing.
    func watch(fd: Int32, of connection: SocketConnection, _ interest: Interest) {
        if cepoll_add(poller, fd, interest.events, connection.id) != 0 {
            connection.closeNow()
        }
    }

    func change(fd: Int32, of connection: SocketConnection, to interest: Interest) {
        _ = cepoll_modify(poller, fd, interest.events, connection.id)
    }

    func forget(fd: Int32) {
        _ = cepoll_remove(poller, fd)
    }

    private func dispatchReadyEvents() {
        let count = cepoll_poll(poller, readyEvents, Self.readyEventCapacity)
        guard count > 0 else { return }
        for i in 0..<Int(count) {
            let event = readyEvents[i]
            if event.token & Self.watcherTokenBit != 0 {
                watchers[event.token]?(event.events)
            } else {
                connections[event.token]?.handleReadiness(event.events)
            }
        }
    }

    // MARK: other descriptors

    /// Polls `fd` for a client library that does its own reads and writes (hiredis's
    /// async context): `ready` gets the EPOLL bits on the loop. Starts with no interest;
    /// call on the loop. Returns the token for `watch(_:fd:reading:writing:)` and `unwatch`.
    public func watch(fd: Int32, ready: @escaping (UInt32) -> Void) -> UInt64? {
        let token = nextWatcherToken
        nextWatcherToken += 1
        guard cepoll_add(poller, fd, 0, token) == 0 else { return nil }
        watchers[token] = ready
        return token
    }

    /// Changes what the watched `fd` is polled for (call on the loop).
    public func watch(_ token: UInt64, fd: Int32, reading: Bool, writing: Bool) {
        _ = cepoll_modify(poller, fd, Interest(reading: reading, writing: writing).events, token)
    }

    /// Stops polling `fd` (before it is closed; call on the loop).
    public func unwatch(_ token: UInt64, fd: Int32) {
        watchers[token] = nil
        _ = cepoll_remove(poller, fd)
    }

    /// Flushes `connection` once the current loop turn ends, so everything
    /// queued to it in this turn goes out in one `writev`.
    ///
    /// Under load the pass is also deferred by as long as the previous pass took
    /// (at most `maximumFlushDelay`): with one system call per connection per pass,
    /// a loop fanning out many messages spends at most half its time writing and
    /// each `writev` carries every message that arrived meanwhile. Idle loops flush
    /// at once.
    func scheduleFlush(_ connection: SocketConnection) {
        pendingFlush.append(connection)
        guard !flushScheduled else { return }
        flushScheduled = true
        let earliest = lastFlushEnd + min(lastFlushDuration, Self.maximumFlushDelay)
        if DispatchTime.now().uptimeNanoseconds >= earliest {
            queue.async { [weak self] in self?.flushPending() }
        } else {
            queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: earliest)) { [weak self] in self?.flushPending() }
        }
    }

    private func flushPending() {
        flushScheduled = false
        let start = DispatchTime.now().uptimeNanoseconds
        swap(&pendingFlush, &flushing)
        for connection in flushing { connection.flushScheduledWrites() }
        flushing.removeAll(keepingCapacity: true)
        lastFlushEnd = DispatchTime.now().uptimeNanoseconds
        lastFlushDuration = lastFlushEnd - start
    }

    private func sweep() {
        tick += 1
        var queued = 0
        for connection in Array(connections.values) {
            connection.handler?.connectionTick(connection, tick: tick)
            connection.sweep(tick: tick)
            queued += connection.queuedByteCount
        }
        queuedOutputBytes = queued
        sweepObserver?(self)
    }
}

/// The EPOLL bits a watcher's `ready` callback gets (`EventLoop.watch(fd:ready:)`).
public enum ReadinessBits {
    public static let readable: UInt32 = CEPOLL_IN
    public static let writable: UInt32 = CEPOLL_OUT
    public static let failed: UInt32 = CEPOLL_ERR | CEPOLL_HUP
}

/// N event loops, handed out round-robin.
public final class EventLoopGroup: @unchecked Sendable {
    public let loops: [EventLoop]
    let reclaimer = MemoryReclaimer()
    private let nextIndex = Atomic<Int>(0)

    public init(count: Int) {
        // A write to a socket the peer reset must fail with EPIPE, not kill the process.
        signal(SIGPIPE, SIG_IGN)
        let reclaimer = self.reclaimer
        loops = (0..<max(1, count)).map { EventLoop(index: $0, reclaimer: reclaimer) }
    }

    public func next() -> EventLoop {
        let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// The CPUs this process may run on: its affinity mask, which `taskset` and
    /// cpusets narrow while the online count (`sysconf`, Foundation's
    /// `activeProcessorCount`) stays the machine's.
    public static var schedulableProcessorCount: Int {
        let count = Int(cepoll_schedulable_cpus())
        return count > 0 ? count : Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }
}
