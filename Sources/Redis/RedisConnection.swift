import CHiredis
import Dispatch
import EventLoop
#if canImport(Glibc)
import Glibc
#endif

/// One hiredis async connection, driven by one of the gateway's event loops through
/// hiredis's adapter hooks: the loop polls the socket with the interest hiredis asks
/// for and hands readiness to `redisAsyncHandleRead` / `redisAsyncHandleWrite`.
/// No thread of its own, no blocking call.
///
/// Confined to its loop: create it and call every method there; callbacks run there.
/// It stays alive while hiredis holds its context and goes away once the context is
/// freed (after `close()`, a lost connection, or a failed connect).
public final class RedisConnection: @unchecked Sendable {
    public let loop: EventLoop
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    private var token: UInt64?
    private var fd: Int32 = -1
    private var connected = false
    private var onConnect: ((String?) -> Void)?
    private var onClose: ((String?) -> Void)?
    /// Held while hiredis holds a pointer to this object.
    private var selfReference: Unmanaged<RedisConnection>?
    /// Subscription handlers, kept here rather than by hiredis: hiredis registers one per
    /// channel and calls each registration at a disconnect, so one handler hears
    /// `.disconnected` once per channel; it lives until hiredis's last call.
    private var subscriptions: [ReplyBox] = []

    /// Starts connecting to `host:port` (an IP address; hiredis does not resolve names
    /// asynchronously). `connected` gets nil once the connection is up or the reason it
    /// failed (within `timeout`); after a success `closed` gets the reason it went down
    /// (nil: `close()` was called). Call on `loop`.
    public init(host: String, port: Int, loop: EventLoop, timeout: DispatchTimeInterval = .seconds(2),
                connected: @escaping (String?) -> Void, closed: @escaping (String?) -> Void) {
        self.loop = loop
        self.onConnect = connected
        self.onClose = closed
        guard let context = redisAsyncConnect(host, Int32(port)) else {
            fail("redis: out of memory")
            return
        }
        if context.pointee.err != 0 {
            let reason = Self.errorText(context)
            redisAsyncFree(context)
            fail("redis \(host):\(port): \(reason)")
            return
        }
        let fd = chiredis_fd(context)
        guard let token = loop.watch(fd: fd, ready: { [unowned self] events in handle(events) }) else {
            redisAsyncFree(context)
            fail("redis: cannot poll its socket")
            return
        }
        self.context = context
        self.fd = fd
        self.token = token
        let reference = Unmanaged.passRetained(self)
        selfReference = reference
        guard chiredis_attach(context, reference.toOpaque(), Self.interestChanged, Self.connectFinished,
                              Self.disconnected, Self.replied, Self.released) == 0 else {
            self.context = nil
            loop.unwatch(token, fd: fd)
            self.token = nil
            selfReference = nil
            reference.release()
            redisAsyncFree(context)
            fail("redis: out of memory")
            return
        }
        loop.queue.asyncAfter(deadline: .now() + timeout) { [weak self] in
            guard let self, !self.connected, let context = self.context else { return }
            // Freeing a context that never connected makes no disconnect callback.
            self.context = nil
            redisAsyncFree(context)
            finishConnect("redis \(host):\(port): no connection within \(timeout)")
        }
    }

    public var isConnected: Bool { connected && context != nil }

    /// Sends one command; `reply` runs on the loop with its reply, or `.disconnected`.
    public func send(_ arguments: [[UInt8]], reply: @escaping (RedisReply) -> Void) {
        command(arguments, box: ReplyBox(handler: reply, persistent: false))
    }

    public func send(_ arguments: [String], reply: @escaping (RedisReply) -> Void) {
        send(arguments.map { Array($0.utf8) }, reply: reply)
    }

    /// SUBSCRIBE `channels`: `message` gets the subscription's replies (the confirmations
    /// and `["message", channel, payload]` arrays), then `.disconnected` once, when the
    /// connection goes away. A subscribed connection takes no other commands.
    public func subscribe(_ channels: [String], message: @escaping (RedisReply) -> Void) {
        let box = ReplyBox(handler: message, persistent: true)
        subscriptions.append(box)
        command([Array("SUBSCRIBE".utf8)] + channels.map { Array($0.utf8) }, box: box)
    }

    /// Closes after the replies already asked for have come; `closed` gets nil.
    public func close() {
        guard let context else { return }
        if connected {
            redisAsyncDisconnect(context)
        } else {
            self.context = nil
            redisAsyncFree(context)
            finishConnect("redis: closed before it connected")
        }
    }

    // MARK: hiredis

    private func command(_ arguments: [[UInt8]], box: ReplyBox) {
        guard let context else {
            box.handler(.disconnected)
            return
        }
        // A one-off command's box is owned by hiredis until its reply; a subscription's by `subscriptions`.
        let unmanaged = box.persistent ? Unmanaged.passUnretained(box) : Unmanaged.passRetained(box)
        var lengths = arguments.map(\.count)
        let status: Int32 = withPointers(to: arguments) { pointers in
            lengths.withUnsafeMutableBufferPointer { lengths in
                chiredis_command(context, unmanaged.toOpaque(), Int32(arguments.count), pointers, lengths.baseAddress)
            }
        }
        if status != REDIS_OK {
            if !box.persistent { unmanaged.release() }
            box.handler(.disconnected)
        }
    }

    /// hiredis copies the arguments into its output buffer during the call.
    private func withPointers<R>(to arguments: [[UInt8]],
                                 _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let total = arguments.reduce(0) { $0 + $1.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 1)
        let pointers = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(arguments.count, 1))
        defer {
            storage.deallocate()
            pointers.deallocate()
        }
        var offset = 0
        for (index, argument) in arguments.enumerated() {
            let start = storage.baseAddress! + offset  // allocated above, never nil
            argument.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress, bytes.count > 0 { start.copyMemory(from: base, byteCount: bytes.count) }
            }
            pointers[index] = UnsafePointer(start.assumingMemoryBound(to: CChar.self))
            offset += argument.count
        }
        return body(pointers)
    }

    private func handle(_ events: UInt32) {
        guard let context else { return }
        if events & (ReadinessBits.readable | ReadinessBits.failed) != 0 { redisAsyncHandleRead(context) }
        // Reading may have freed the context (a lost connection).
        if events & ReadinessBits.writable != 0, let context = self.context { redisAsyncHandleWrite(context) }
    }

    private func setInterest(reading: Bool, writing: Bool) {
        guard let token else { return }
        loop.watch(token, fd: fd, reading: reading, writing: writing)
    }

    private func finishConnect(_ failure: String?) {
        if failure != nil {
            forgetContext()
            onClose = nil
        } else {
            connected = true
        }
        let callback = onConnect
        onConnect = nil
        callback?(failure)
    }

    private func fail(_ reason: String) {
        let callback = onConnect
        onConnect = nil
        onClose = nil
        callback?(reason)
    }

    /// hiredis is freeing the context: no more calls into it, no more polling its socket.
    private func forgetContext() {
        if let token { loop.unwatch(token, fd: fd) }
        token = nil
        context = nil
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisAsyncContext>) -> String {
        guard let text = context.pointee.errstr else { return "error \(context.pointee.err)" }
        return String(cString: text)
    }

    private static func owner(_ pointer: UnsafeMutableRawPointer?) -> RedisConnection? {
        guard let pointer else { return nil }
        return Unmanaged<RedisConnection>.fromOpaque(pointer).takeUnretainedValue()
    }

    private static let interestChanged: chiredis_interest_fn = { owner, reading, writing in
        RedisConnection.owner(owner)?.setInterest(reading: reading != 0, writing: writing != 0)
    }

    private static let connectFinished: chiredis_status_fn = { owner, status in
        guard let connection = RedisConnection.owner(owner) else { return }
        if status == REDIS_OK {
            connection.finishConnect(nil)
        } else {
            let reason = connection.context.map(errorText) ?? "connect failed"
            // hiredis frees the context right after this callback.
            connection.finishConnect("redis: \(reason)")
        }
    }

    private static let disconnected: chiredis_status_fn = { owner, status in
        guard let connection = RedisConnection.owner(owner) else { return }
        let reason = status == REDIS_OK ? nil : ("redis: " + (connection.context.map(errorText) ?? "connection lost"))
        let callback = connection.onClose
        connection.onClose = nil
        connection.connected = false
        connection.forgetContext()
        callback?(reason)
    }

    /// hiredis's last call: it holds no pointer to this object any more.
    private static let released: chiredis_status_fn = { owner, _ in
        guard let connection = RedisConnection.owner(owner) else { return }
        connection.forgetContext()
        let reference = connection.selfReference
        connection.selfReference = nil
        connection.subscriptions.removeAll()
        reference?.release()
    }

    private static let replied: chiredis_reply_fn = { box, reply in
        guard let box else { return }
        let unmanaged = Unmanaged<ReplyBox>.fromOpaque(box)
        let replyBox = unmanaged.takeUnretainedValue()
        let value = RedisReply(reply)
        if !replyBox.persistent {
            unmanaged.release()
        } else if value == .disconnected {
            // Once per subscription, however many channels it registered.
            guard !replyBox.ended else { return }
            replyBox.ended = true
        }
        replyBox.handler(value)
    }
}

/// The handler of one command (or of a subscription, called for every message).
private final class ReplyBox {
    let handler: (RedisReply) -> Void
    let persistent: Bool
    /// A subscription that has heard `.disconnected`.
    var ended = false

    init(handler: @escaping (RedisReply) -> Void, persistent: Bool) {
        self.handler = handler
        self.persistent = persistent
    }
}
