// The fan-out write path of one event loop (ordo-one/benchmark): one shared
// 100-byte frame queued to 1,000 connections and flushed with one `writev` each.
//
//   cd Benchmarks && swift package --disable-sandbox benchmark --target FanOutBenchmarks
//
// The connections are one end of 1,000 AF_UNIX socketpairs adopted by one
// `EventLoop`; the other ends are drained (and checked: exactly one frame each)
// after every iteration, outside the measurement. One measured iteration is one
// fan-out, i.e. 1,000 deliveries, reported as is (scaling factor .one: a .kilo
// table would round mallocs per delivery to an integer), so
// mallocs per delivery = Malloc (total) / 1,000, time per delivery = time / 1,000,
// deliveries per second = throughput × 1,000.
//
// `cpuTotal` is the process's CPU time from /proc (10 ms ticks, too coarse for a
// ~3 ms iteration); "CPU time, process clock (μs)" is the same thing read with
// CLOCK_PROCESS_CPUTIME_ID just inside the measured part. Both include the loop's
// Dispatch worker thread. Linux has no `syscalls` metric; `writeSyscalls`
// (/proc/self/io syscw) counts the `writev`s.
//
// Malloc counting is process-wide and includes the harness's own /proc reads
// for cpuTotal and writeSyscalls at start/stop: the "harness" benchmark (no
// writes) shows that floor; subtract it before dividing by 1,000.
import Benchmark
import Dispatch
import EventLoop
import Glibc

/// Connections per fan-out.
private let fanOut = 1_000
private let frameBytes = 100

/// The handler of every benchmark connection: the peers never send anything.
private final class IdleHandler: ConnectionHandler {
    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {}
    func connectionDidClose(_ connection: SocketConnection) {}
}

/// One loop with `fanOut` adopted socketpair ends, the peer ends and the shared frame.
/// Used from the benchmark thread and the loop's queue, one at a time.
private final class FanOutFixture: @unchecked Sendable {
    let loop: EventLoop
    let connections: [SocketConnection]
    /// One shared frame, as the gateway queues one encoded event to every member.
    let frame: [UInt8]
    private let peers: [Int32]
    private let drainBuffer: UnsafeMutableRawBufferPointer
    /// The last observed fan-out (uptime ns): started writing, saw every queue drained.
    private var lastPassStart: UInt64 = 0
    private var lastPassEnd: UInt64 = 0

    init() {
        Self.raiseFileLimit(to: rlim_t(2 * fanOut + 256))
        let loop = EventLoop(index: 0)
        let handler = IdleHandler()
        var connections: [SocketConnection] = []
        var peers: [Int32] = []
        connections.reserveCapacity(fanOut)
        peers.reserveCapacity(fanOut)
        for index in 0..<fanOut {
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
                fatalError("socketpair #\(index) failed: \(String(cString: strerror(errno)))")
            }
            Self.setNonBlocking(fds[0])
            Self.setNonBlocking(fds[1])
            let gatewaySide = fds[0]
            let adopted = loop.queue.sync {
                SocketConnection.accepted(fd: gatewaySide, loop: loop, tls: nil, handler: handler)
            }
            guard let adopted else { fatalError("SocketConnection.accepted failed for socketpair #\(index)") }
            connections.append(adopted)
            peers.append(fds[1])
        }
        self.loop = loop
        self.connections = connections
        self.peers = peers
        frame = (0..<frameBytes).map { UInt8(truncatingIfNeeded: $0) }
        drainBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    private static func raiseFileLimit(to needed: rlim_t) {
        var limit = rlimit()
        guard getrlimit(fileLimitResource, &limit) == 0 else { fatalError("getrlimit failed: errno \(errno)") }
        guard limit.rlim_cur < needed else { return }
        guard limit.rlim_max >= needed else {
            fatalError("RLIMIT_NOFILE hard limit \(limit.rlim_max) is below the \(needed) descriptors needed")
        }
        limit.rlim_cur = needed
        guard setrlimit(fileLimitResource, &limit) == 0 else { fatalError("setrlimit failed: errno \(errno)") }
    }

    private static var fileLimitResource: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    private static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            fatalError("fcntl(O_NONBLOCK) failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Every connection's queue went to the kernel (call on the loop).
    private func allFlushed() -> Bool {
        connections.allSatisfy { $0.queuedByteCount == 0 }
    }

    /// Blocks until the flush pass the last writes scheduled has handed every byte to
    /// the kernel; also covers a pass the loop deferred with `asyncAfter`.
    func waitUntilFlushed() {
        while !loop.queue.sync(execute: { allFlushed() }) {}
        lastPassEnd = DispatchTime.now().uptimeNanoseconds
    }

    /// Call right before the writes of a fan-out.
    func markPassStart() {
        lastPassStart = DispatchTime.now().uptimeNanoseconds
    }

    /// Outside the measurement, before a fan-out: the loop defers a flush pass by as long
    /// as the previous one took (`scheduleFlush`); wait that out so every measured pass is
    /// the immediate one (`queue.async`), as on a loop that is not saturated. The previous
    /// pass lay within [lastPassStart, lastPassEnd], so this bound is conservative.
    func waitOutFlushDeferral() {
        guard lastPassEnd > lastPassStart else { return }
        let earliest = lastPassEnd + min(lastPassEnd - lastPassStart, 5_000_000)
        let now = DispatchTime.now().uptimeNanoseconds
        if now < earliest { usleep(useconds_t((earliest - now + 999) / 1000)) }
    }

    /// Reads every peer end dry; each must have received exactly `expectedFrames` frames.
    func drainPeers(expectedFrames: Int) {
        let expected = expectedFrames * frameBytes
        for (index, peer) in peers.enumerated() {
            var received = 0
            while true {
                let count = read(peer, drainBuffer.baseAddress, drainBuffer.count)
                if count > 0 {
                    received += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    break
                } else {
                    fatalError("peer #\(index) read returned \(count): \(String(cString: strerror(errno)))")
                }
            }
            guard received == expected else {
                fatalError("peer #\(index) received \(received) bytes, expected \(expected)")
            }
        }
    }
}

/// Created by the first benchmark's setup and shared by all of them (one at a time):
/// an EventLoop is never torn down, so the loop and its 2,000 descriptors live until exit.
private let fixture = FanOutFixture()

/// Process CPU time (all threads) in ns, at full clock resolution.
private func processCPUNanoseconds() -> Int {
    var time = timespec()
    guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time) == 0 else { return 0 }
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

/// Records the process CPU time spent between two `processCPUNanoseconds()` readings.
private func recordCPUTime(_ benchmark: Benchmark, from start: Int, to end: Int) {
    benchmark.measurement(cpuTime, (end - start + 500) / 1_000)
}

private let cpuTime = BenchmarkMetric.custom("CPU time, process clock (μs)")

private func configuration() -> Benchmark.Configuration {
    .init(metrics: [.throughput, .wallClock, .cpuTotal, cpuTime, .mallocCountTotal, .writeSyscalls],
          warmupIterations: 10, scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 10_000)
}

private func register(_ name: String, closure: @escaping @Sendable (Benchmark, FanOutFixture) -> Void) {
    Benchmark(name, configuration: configuration(), closure: { benchmark in
        closure(benchmark, fixture)
    }, setup: {
        blackHole(fixture)  // builds the fixture outside the measurement
    })
}

let benchmarks: @Sendable () -> Void = {
    // The whole write path: 1,000 × write(frame) in one loop turn, then the loop's flush
    // pass (one writev per connection), measured until every queue is empty.
    register("fan-out: one shared 100 B frame queued and flushed to 1,000 connections") { benchmark, fixture in
        fixture.waitOutFlushDeferral()
        let loop = fixture.loop
        let connections = fixture.connections
        let frame = fixture.frame
        fixture.markPassStart()
        benchmark.startMeasurement()
        let cpuStart = processCPUNanoseconds()
        loop.queue.sync {
            for connection in connections {
                connection.write(frame)
            }
        }
        fixture.waitUntilFlushed()
        let cpuEnd = processCPUNanoseconds()
        benchmark.stopMeasurement()
        recordCPUTime(benchmark, from: cpuStart, to: cpuEnd)
        fixture.drainPeers(expectedFrames: 1)
    }

    // Only the queueing: measured inside the loop turn that does the writes, so the flush
    // pass they schedule cannot start before the measurement stops (the loop is serial).
    register("fan-out: one shared 100 B frame queued to 1,000 connections (write only, flush not measured)") { benchmark, fixture in
        fixture.waitOutFlushDeferral()
        let loop = fixture.loop
        let connections = fixture.connections
        let frame = fixture.frame
        fixture.markPassStart()
        loop.queue.sync {
            benchmark.startMeasurement()
            let cpuStart = processCPUNanoseconds()
            for connection in connections {
                connection.write(frame)
            }
            let cpuEnd = processCPUNanoseconds()
            benchmark.stopMeasurement()
            recordCPUTime(benchmark, from: cpuStart, to: cpuEnd)
        }
        fixture.waitUntilFlushed()
        fixture.drainPeers(expectedFrames: 1)
    }

    // What the harness of the first benchmark costs without any write: the two loop
    // round trips (queue.sync) and the scan of 1,000 empty queues.
    register("fan-out harness: loop round trips and the drained check, no writes") { benchmark, fixture in
        fixture.waitOutFlushDeferral()
        let loop = fixture.loop
        let connections = fixture.connections
        fixture.markPassStart()
        benchmark.startMeasurement()
        let cpuStart = processCPUNanoseconds()
        loop.queue.sync {
            for connection in connections {
                blackHole(connection)
            }
        }
        fixture.waitUntilFlushed()
        let cpuEnd = processCPUNanoseconds()
        benchmark.stopMeasurement()
        recordCPUTime(benchmark, from: cpuStart, to: cpuEnd)
        fixture.drainPeers(expectedFrames: 0)
    }
}
