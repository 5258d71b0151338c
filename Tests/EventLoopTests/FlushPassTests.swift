import Dispatch
import Testing
@testable import EventLoop
#if canImport(Glibc)
import Glibc
#endif

@Suite("Flush passes")
struct FlushPassTests {
    final class Silent: ConnectionHandler, @unchecked Sendable {
        func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {}
        func connectionTick(_ connection: SocketConnection, tick: UInt64) {}
        func connectionDidClose(_ connection: SocketConnection) {}
    }

    final class Counter: @unchecked Sendable {
        var value = -1
    }

    /// How many of `peers` have a byte waiting, without taking it.
    private static func peersWithData(_ peers: [Int32]) -> Int {
        var byte: UInt8 = 0
        return peers.filter { recv($0, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 1 }.count
    }

    @Test("work queued behind a long pass runs after its first slice, and the pass still reaches everyone")
    func longPassLetsQueuedWorkIn() throws {
        let loop = EventLoop(index: 0)
        let handler = Silent()
        let count = 3 * EventLoop.flushSliceSize
        var peers: [Int32] = []
        var connections: [SocketConnection] = []
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            peers.append(fds[1])
            let connection = try #require(loop.queue.sync {
                SocketConnection.accepted(fd: fds[0], loop: loop, tls: nil, handler: handler)
            })
            connections.append(connection)
        }
        defer { peers.forEach { _ = close($0) } }

        let flushedBeforeProbe = DispatchSemaphore(value: 0)
        let seenByProbe = Counter()
        loop.queue.async { [peers, connections] in
            for connection in connections { connection.write([0x2A]) }
            // Queued behind the pass, which starts right after this work item.
            loop.queue.async {
                seenByProbe.value = Self.peersWithData(peers)
                flushedBeforeProbe.signal()
            }
        }
        #expect(flushedBeforeProbe.wait(timeout: .now() + 5) == .success)
        #expect(seenByProbe.value == EventLoop.flushSliceSize)

        // The rest of the pass was queued behind the probe, a slice at a time.
        var everyone = 0
        for _ in 0..<500 where everyone < count {
            loop.queue.sync {}
            everyone = Self.peersWithData(peers)
        }
        #expect(everyone == count)
        loop.queue.sync { connections.forEach { $0.closeNow() } }
    }
}
