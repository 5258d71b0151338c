// Group-commit throughput of SQLiteStore and PostgresStore (ordo-one/benchmark).
//
//   cd Benchmarks && swift package --disable-sandbox benchmark --target StorageBenchmarks
//   CHAT_BENCH_POSTGRES_URL=postgres://chat@127.0.0.1:PORT/chat \
//     swift package --disable-sandbox benchmark --target StorageBenchmarks --filter 'PostgreSQL.*'
//
// N closed-loop senders, ok-after-commit: each sender enqueues a message, waits
// for its completion, and sends the next one from one of two "event loop"
// queues (as the gateway answers `ok` on the connection's loop). The senders
// run continuously from setup to teardown; one measured iteration is the time
// for the next 1,000 completions (scaling factor .kilo), so `throughput` reads
// as messages per second (shown in K).
//
// The PostgreSQL cases run only when CHAT_BENCH_POSTGRES_URL names a server
// (`scripts/postgres start DIR` prints one); each creates a fresh database on it
// (its user needs CREATEDB) and drops it afterwards.
import Benchmark
import ChatCore
import Dispatch
import Foundation
import Logging
import PostgresNIO
import PostgresStorage
import SQLiteStorage
import Storage
import Synchronization

/// Closed-loop senders writing into a fresh store (a SQLite file in a temporary
/// directory, or a PostgreSQL database made for the run).
final class SenderPipeline: Sendable {
    private struct Progress {
        var completed = 0
        var target = Int.max
        var waiter: DispatchSemaphore?
    }

    private let store: any Store
    /// Waits until every write enqueued before has completed.
    private let flushStore: @Sendable () async -> Void
    private let channels: Int
    private let ids = IdentifierGenerator()
    private let loops = (0..<2).map { DispatchQueue(label: "bench.loop.\($0)") }
    private let progress = Mutex(Progress())
    private let running = Atomic<Bool>(true)
    private let failures = Atomic<Int>(0)

    /// Provisions `senders` users and `channels` channels (sender i is a member of
    /// channel i % channels), then starts every sender.
    init(store: any Store, senders: Int, channels: Int, flush: @escaping @Sendable () async -> Void) async {
        self.store = store
        self.flushStore = flush
        self.channels = channels
        for sender in 0..<senders {
            store.enqueue(.upsertUser(User(id: "u\(sender)", name: "User \(sender)", createdAt: 1))) { _ in }
        }
        for channel in 0..<channels {
            let members = stride(from: channel, to: senders, by: channels).map { "u\($0)" }
            store.enqueue(.createChannel(Channel(id: "ch\(channel)", type: .group, members: members,
                                                 createdAt: 1, createdBy: members.first ?? "u0"))) { _ in }
        }
        await flush()
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

    /// Stops the senders and waits for their last writes.
    func stop() async {
        running.store(false, ordering: .relaxed)
        await flushStore()
        try? await Task.sleep(for: .milliseconds(50))   // let the last loop hops run out
        await flushStore()
    }
}

/// A SQLite store in a directory of its own under the temporary folder.
struct SQLiteRun: Sendable {
    let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("storage-bench-\(UUID().uuidString)")

    func start(senders: Int, channels: Int, synchronous: SQLiteStore.Synchronous) async throws -> SenderPipeline {
        let store = try SQLiteStore(directory: directory, synchronous: synchronous)
        return await SenderPipeline(store: store, senders: senders, channels: channels, flush: { store.flush() })
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// A database of its own, `chat_bench_<random>`, on the server CHAT_BENCH_POSTGRES_URL names.
final class PostgresRun: Sendable {
    static let baseURL: String? = {
        let url = ProcessInfo.processInfo.environment["CHAT_BENCH_POSTGRES_URL"] ?? ""
        return url.isEmpty ? nil : url
    }()

    let base: String
    let name = "chat_bench_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
    /// The store's logs (a lost connection would fail the writes, and the run, anyway).
    private static let quiet = Logger(label: "bench.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    var url: String {
        guard var components = URLComponents(string: base) else { return base }
        components.path = "/" + name
        return components.string ?? base
    }

    /// Group commits observed: batches, writes in them, and their BEGIN…COMMIT time.
    private let commits = Mutex((batches: 0, writes: 0, nanoseconds: UInt64(0)))

    init(base: String) { self.base = base }

    func start(senders: Int, channels: Int) async throws -> SenderPipeline {
        try await admin("CREATE DATABASE \(name)")
        let store = try await PostgresStore.open(url: url, logger: Self.quiet) { [self] writes, nanoseconds in
            self.commits.withLock { $0.batches += 1; $0.writes += writes; $0.nanoseconds += nanoseconds }
        }
        return await SenderPipeline(store: store, senders: senders, channels: channels, flush: { await store.flushed() })
    }

    /// Drops the database, closing whatever connections are still open on it; with
    /// CHAT_BENCH_VERBOSE set, first prints the batch sizes and times of the run.
    func remove() async throws {
        if ProcessInfo.processInfo.environment["CHAT_BENCH_VERBOSE"] != nil {
            let (batches, writes, nanoseconds) = commits.withLock { ($0.batches, $0.writes, $0.nanoseconds) }
            let line = "\(name): \(batches) group commits, \(writes / max(batches, 1)) writes and "
                + "\(Double(nanoseconds) / Double(max(batches, 1)) / 1e6) ms each (BEGIN…COMMIT)\n"
            FileHandle.standardError.write(Data(line.utf8))
        }
        // FORCE cannot end an autovacuum worker on the database without superuser rights:
        // the drop then fails until the worker is done.
        var attempt = 0
        while true {
            attempt += 1
            do {
                try await admin("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                return
            } catch where attempt < 30 {
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Runs one statement on the server's base database.
    private func admin(_ sql: String) async throws {
        let client = PostgresClient(configuration: try PostgresStore.clientConfiguration(url: base))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await client.query(PostgresQuery(unsafeSQL: sql), logger: Self.quiet)
        }
    }
}

private let pipelines = Mutex<[String: SenderPipeline]>([:])

private func pipeline(_ name: String) -> SenderPipeline? {
    pipelines.withLock { $0[name] }
}

private let runs = Mutex<[String: @Sendable () async throws -> Void]>([:])

/// One case: `start` makes the store and its senders at setup; the store is removed at teardown.
private func register(_ name: String, scaling: BenchmarkScalingFactor,
                      start: @escaping @Sendable () async throws -> (SenderPipeline, @Sendable () async throws -> Void)) {
    let configuration = Benchmark.Configuration(
        metrics: [.throughput, .wallClock], warmupIterations: 3, scalingFactor: scaling,
        maxDuration: .seconds(5), maxIterations: 2_000)
    Benchmark(name, configuration: configuration, closure: { benchmark in
        guard let pipeline = pipeline(name) else { fatalError("no pipeline for \(name)") }
        benchmark.startMeasurement()
        pipeline.waitForCompletions(benchmark.scaledIterations.count)
        benchmark.stopMeasurement()
    }, setup: {
        let (pipeline, remove) = try await start()
        pipelines.withLock { $0[name] = pipeline }
        runs.withLock { $0[name] = remove }
    }, teardown: {
        let remove = runs.withLock { $0.removeValue(forKey: name) }
        var failures = 0
        // The senders stop and the pipeline (with its store) goes before the store's data does.
        if let pipeline = pipelines.withLock({ $0.removeValue(forKey: name) }) {
            await pipeline.stop()
            failures = pipeline.failureCount
        }
        try await remove?()
        if failures > 0 { fatalError("\(failures) writes failed in \(name)") }
    })
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
        let (senders, channels, synchronous) = (item.senders, item.channels, item.synchronous)
        register(name, scaling: item.scaling) {
            let run = SQLiteRun()
            let pipeline = try await run.start(senders: senders, channels: channels, synchronous: synchronous)
            return (pipeline, { run.remove() })
        }
    }

    // PostgresStore in the same shape: the server's defaults (synchronous_commit on, fsync on),
    // so an `ok` means the message's WAL record is on disk, like synchronous=FULL above.
    guard let base = PostgresRun.baseURL else { return }
    let postgresCases: [(senders: Int, channels: Int, scaling: BenchmarkScalingFactor)] = [
        (200, 100, .kilo),
        (1_000, 1_000, .kilo),
        (1, 1, .one),
    ]
    for item in postgresCases {
        let name = "PostgreSQL group commit, \(item.senders) sender\(item.senders == 1 ? "" : "s") over "
            + "\(item.channels) channel\(item.channels == 1 ? "" : "s") ok-after-commit"
        let (senders, channels) = (item.senders, item.channels)
        register(name, scaling: item.scaling) {
            let run = PostgresRun(base: base)
            do {
                return (try await run.start(senders: senders, channels: channels), { try await run.remove() })
            } catch {
                try? await run.remove()
                throw error
            }
        }
    }
}
