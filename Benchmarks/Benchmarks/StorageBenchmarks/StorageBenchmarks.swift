// Group-commit throughput of SQLiteStore (ordo-one/benchmark).
//
//   cd Benchmarks && swift package --disable-sandbox benchmark --target StorageBenchmarks
//
// N closed-loop senders, ok-after-commit: each sender enqueues a message, waits
// for its completion, and sends the next one from one of two "event loop"
// queues (as the gateway answers `ok` on the connection's loop). The senders
// run continuously from setup to teardown; one measured iteration is the time
// for the next 1,000 completions (scaling factor .kilo), so `throughput` reads
// as messages per second (shown in K).
import Benchmark
import ChatCore
import Dispatch
import Foundation
import Storage
import Synchronization

/// Closed-loop senders writing into a fresh store in a temporary directory.
final class SenderPipeline: Sendable {
    private struct Progress {
        var completed = 0
        var target = Int.max
        var waiter: DispatchSemaphore?
    }

    private let store: SQLiteStore
    private let directory: String
    private let channels: Int
    private let ids = IdentifierGenerator()
    private let loops = (0..<2).map { DispatchQueue(label: "bench.loop.\($0)") }
    private let progress = Mutex(Progress())
    private let running = Atomic<Bool>(true)
    private let failures = Atomic<Int>(0)

    init(senders: Int, channels: Int, synchronous: SQLiteStore.Synchronous) throws {
        directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("storage-bench-\(UUID().uuidString)")
        store = try SQLiteStore(directory: directory, synchronous: synchronous)
        self.channels = channels
        for sender in 0..<senders {
            store.enqueue(.upsertUser(User(id: "u\(sender)", name: "User \(sender)", createdAt: 1))) { _ in }
        }
        for channel in 0..<channels {
            let members = stride(from: channel, to: senders, by: channels).map { "u\($0)" }
            store.enqueue(.createChannel(Channel(id: "ch\(channel)", type: .group, members: members,
                                                 createdAt: 1, createdBy: members.first ?? "u0"))) { _ in }
        }
        store.flush()
        for sender in 0..<senders { send(sender: sender, number: 0) }
    }

    private func send(sender: Int, number: Int) {
        guard running.load(ordering: .relaxed) else { return }
        // Time-ordered ids, as the gateway's IdentifierGenerator makes them.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let message = Message(id: ids.make(prefix: "m_", at: now), channelID: "ch\(sender % channels)", senderID: "u\(sender)",
                              text: "hey, are we still on for lunch tomorrow?", clientMessageID: "c-\(number)",
                              createdAt: now)
        store.enqueue(.insertMessage(message)) { [self] result in
            if case .failure = result { failures.add(1, ordering: .relaxed) }
            completed()
            loops[sender % loops.count].async { self.send(sender: sender, number: number + 1) }
        }
    }

    private func completed() {
        let waiter: DispatchSemaphore? = progress.withLock { progress in
            progress.completed += 1
            guard progress.completed >= progress.target, let waiter = progress.waiter else { return nil }
            progress.waiter = nil
            progress.target = .max
            return waiter
        }
        waiter?.signal()
    }

    /// Blocks until `count` more messages have been acknowledged.
    func waitForCompletions(_ count: Int) {
        let waiter = DispatchSemaphore(value: 0)
        progress.withLock { progress in
            progress.target = progress.completed + count
            progress.waiter = waiter
        }
        waiter.wait()
    }

    var failureCount: Int { failures.load(ordering: .relaxed) }

    func stop() {
        running.store(false, ordering: .relaxed)
        store.flush()
        Thread.sleep(forTimeInterval: 0.05)   // let the last loop hops run out
        store.flush()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

private let pipelines = Mutex<[String: SenderPipeline]>([:])

private func pipeline(_ name: String) -> SenderPipeline? {
    pipelines.withLock { $0[name] }
}

let benchmarks: @Sendable () -> Void = {
    let cases: [(senders: Int, channels: Int, synchronous: SQLiteStore.Synchronous, scaling: BenchmarkScalingFactor)] = [
        (200, 100, .full, .kilo),
        (200, 100, .normal, .kilo),
        (1, 1, .full, .one),
        (1, 1, .normal, .one),
    ]
    for item in cases {
        let mode = item.synchronous == .full ? "FULL" : "NORMAL"
        let name = "Group commit, \(item.senders) sender\(item.senders == 1 ? "" : "s") ok-after-commit (synchronous=\(mode))"
        let configuration = Benchmark.Configuration(
            metrics: [.throughput, .wallClock], warmupIterations: 3, scalingFactor: item.scaling,
            maxDuration: .seconds(5), maxIterations: 2_000)
        Benchmark(name, configuration: configuration, closure: { benchmark in
            guard let pipeline = pipeline(name) else { fatalError("no pipeline for \(name)") }
            benchmark.startMeasurement()
            pipeline.waitForCompletions(benchmark.scaledIterations.count)
            benchmark.stopMeasurement()
        }, setup: {
            let pipeline = try SenderPipeline(senders: item.senders, channels: item.channels, synchronous: item.synchronous)
            pipelines.withLock { $0[name] = pipeline }
        }, teardown: {
            guard let pipeline = pipelines.withLock({ $0.removeValue(forKey: name) }) else { return }
            pipeline.stop()
            if pipeline.failureCount > 0 { fatalError("\(pipeline.failureCount) writes failed in \(name)") }
        })
    }
}
