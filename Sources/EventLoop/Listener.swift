import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Accepts connections on its own queue and hands each socket to the next
/// event loop, where `onAccept` runs.
///
/// Out of descriptors (EMFILE, ENFILE) or kernel memory, `accept` fails while the
/// connection stays in the backlog, so the level-triggered source would fire again at
/// once and spin a core: the listener stops watching for `retryDelay` instead, and the
/// waiting clients are accepted once descriptors are free again.
public final class Listener: @unchecked Sendable {
    /// How long accepting pauses after the process ran out of descriptors or memory.
    public static let retryDelay: DispatchTimeInterval = .milliseconds(100)

    public let port: Int
    private let fd: Int32
    private let queue = DispatchQueue(label: "chat-gateway.listener")
    private var source: DispatchSourceRead?
    private let group: EventLoopGroup
    private let onAccept: @Sendable (Int32, EventLoop) -> Void
    private var paused = false
    /// Called on the listener's queue each time accepting pauses, with the errno.
    public var onAcceptPaused: (@Sendable (Int32) -> Void)?

    /// Binds host:port (port 0 picks a free one; `port` tells which).
    public init(
        host: String, port: Int, backlog: Int32 = 4096, group: EventLoopGroup,
        onAccept: @escaping @Sendable (_ fd: Int32, _ loop: EventLoop) -> Void
    ) throws(SocketError) {
        fd = try Socket.listen(host: host, port: port, backlog: backlog)
        self.port = Socket.localPort(fd)
        self.group = group
        self.onAccept = onAccept
    }

    public func start() {
        queue.sync {
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [weak self] in self?.acceptPending() }
            let fd = self.fd
            source.setCancelHandler { Glibc.close(fd) }
            self.source = source
            source.resume()
        }
    }

    /// Stops accepting and closes the listening socket.
    public func stop() {
        queue.sync {
            if paused { source?.resume() }
            paused = false
            source?.cancel()
            source = nil
        }
    }

    /// On `queue`: stops watching the socket for `retryDelay`.
    private func pause(_ error: Int32) {
        guard !paused, let source else { return }
        paused = true
        source.suspend()
        onAcceptPaused?(error)
        queue.asyncAfter(deadline: .now() + Self.retryDelay) { [weak self] in
            guard let self, paused else { return }
            paused = false
            self.source?.resume()
        }
    }

    private func acceptPending() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                let error = errno
                if error == EINTR || error == ECONNABORTED { continue }
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM { pause(error) }
                return  // EAGAIN: the source fires again when the next client arrives
            }
            Socket.setNonBlocking(client)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            Socket.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            let loop = group.next()
            let onAccept = self.onAccept
            loop.execute { onAccept(client, loop) }
        }
    }
}
