import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Accepts connections on its own queue and hands each socket to the next
/// event loop, where `onAccept` runs.
public final class Listener: @unchecked Sendable {
    public let port: Int
    private let fd: Int32
    private let queue = DispatchQueue(label: "chat-gateway.listener")
    private var source: DispatchSourceRead?
    private let group: EventLoopGroup
    private let onAccept: @Sendable (Int32, EventLoop) -> Void

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
            source.setEventHandler { [unowned self] in acceptPending() }
            let fd = self.fd
            source.setCancelHandler { Glibc.close(fd) }
            self.source = source
            source.resume()
        }
    }

    /// Stops accepting and closes the listening socket.
    public func stop() {
        queue.sync {
            source?.cancel()
            source = nil
        }
    }

    private func acceptPending() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // EAGAIN, or out of descriptors: the source fires again when it can
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
