import Testing
@testable import EventLoop
#if canImport(Glibc)
import Glibc
#endif

@Suite("WriteQueue")
struct WriteQueueTests {
    /// A connected pair of non-blocking stream sockets with a small send buffer,
    /// so the kernel pushes back early.
    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        Socket.setNonBlocking(fds[0])
        Socket.setNonBlocking(fds[1])
        Socket.setOption(fds[0], SOL_SOCKET, SO_SNDBUF, 4096)
        return (fds[0], fds[1])
    }

    private func drain(_ fd: Int32, into received: inout [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            received += buffer[..<n]
        }
    }

    @Test("chunks go out in order across partial writes and would-block")
    func partialWrites() {
        let (writer, reader) = socketPair()
        defer {
            close(writer)
            close(reader)
        }
        var queue = WriteQueue()
        var expected: [UInt8] = []
        for i in 0..<500 {
            let chunk = [UInt8](repeating: UInt8(i % 251), count: 1 + (i * 37) % 3000)
            queue.append(chunk)
            expected += chunk
        }
        #expect(queue.byteCount == expected.count)
        var received: [UInt8] = []
        var sawWouldBlock = false
        var rounds = 0
        while !queue.isEmpty && rounds < 100_000 {
            rounds += 1
            switch queue.flush(to: writer) {
            case .wouldBlock: sawWouldBlock = true
            case .drained: break
            case .failed(let code): Issue.record("writev failed: \(code)")
            }
            drain(reader, into: &received)
            // Unix sockets hand written bytes straight to the reader: nothing is in flight.
            #expect(queue.byteCount + received.count == expected.count)
        }
        drain(reader, into: &received)
        #expect(sawWouldBlock)
        #expect(queue.isEmpty)
        #expect(received == expected)
    }

    @Test("a peer that went away fails the flush instead of blocking")
    func brokenPipe() {
        let (writer, reader) = socketPair()
        close(reader)
        defer { close(writer) }
        signal(SIGPIPE, SIG_IGN)
        var queue = WriteQueue()
        queue.append([1, 2, 3])
        guard case .failed = queue.flush(to: writer) else {
            Issue.record("expected failure")
            return
        }
    }
}
