import EventLoop
import Logging
import Storage
import Synchronization

/// Whether the services the gateway depends on answer (PostgreSQL; Redis in cluster
/// mode), probed every `interval` off the event loops. `/readyz` reads the last
/// verdict; a change is logged once, not at every probe.
final class DependencyWatch: Sendable {
    struct Probe: Sendable {
        var name: String
        var isReachable: @Sendable () async -> Bool
    }

    /// Names of the dependencies that did not answer the last probe.
    private final class Verdict: Sendable {
        let down = Mutex<[String]>([])
    }

    private let verdict = Verdict()
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts probing; the first verdict comes after the first probe (until then: ready).
    init(probes: [Probe], interval: Duration = .seconds(1), logger: Logger) {
        guard !probes.isEmpty else { return }
        let started = Task(executorPreference: DispatchTaskExecutor.shared) { [verdict] in
            while !Task.isCancelled {
                var unreachable: [String] = []
                for probe in probes where !(await probe.isReachable()) { unreachable.append(probe.name) }
                let previous = verdict.down.withLock { down in
                    defer { down = unreachable }
                    return down
                }
                if previous != unreachable {
                    if unreachable.isEmpty {
                        logger.notice("dependency.reachable", metadata: ["dependencies": "\(previous.joined(separator: ","))"])
                    } else {
                        logger.error("dependency.unreachable", metadata: ["dependencies": "\(unreachable.joined(separator: ","))"])
                    }
                }
                try? await Task.sleep(for: interval)
            }
        }
        task.withLock { $0 = started }
    }

    /// The dependencies that did not answer the last probe (empty: ready).
    var unreachable: [String] { verdict.down.withLock { $0 } }

    func stop() { task.withLock { $0?.cancel() } }

    deinit { stop() }
}
