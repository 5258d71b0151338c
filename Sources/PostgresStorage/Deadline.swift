import Storage
import Synchronization

/// Waits for an operation at most a given time, without waiting for the operation to
/// notice. A task group cannot do this: it awaits its cancelled children, and a
/// postgres-nio lease does not end at cancellation while the server cannot be reached,
/// so a writer or `/readyz` racing one against a sleep would stay suspended for as long
/// as the database is gone.
enum Deadline {
    struct Exceeded: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// What an operation tells its deadline.
    struct Handle: Sendable {
        fileprivate let begin: @Sendable (_ lost: @escaping @Sendable () -> Bool) -> Bool

        /// Marks the operation as begun; false once the deadline has passed, and the
        /// operation must then not begin. `lost` says whether what it runs on is gone
        /// (its connection closed), polled while it runs.
        func begin(lostIf lost: @escaping @Sendable () -> Bool = { false }) -> Bool { begin(lost) }
    }

    /// How often a begun operation's `lost` is asked.
    static let pollInterval = Duration.milliseconds(50)

    /// `operation`'s result, or `Exceeded` once `wait` has passed. An operation that
    /// called `begin` in time is awaited longer: a transaction is not abandoned midway
    /// while it makes progress. It is abandoned when its `lost` has held for two polls in
    /// a row, or at `limit`: postgres-nio never answers a query sent on a connection the
    /// server is closing, and that must not hold the caller. Operations that never call
    /// `begin` get a plain deadline (reads, probes).
    static func run<T: Sendable>(_ wait: Duration, startedLimit limit: Duration? = nil,
                                 _ operation: @escaping @Sendable (Handle) async throws -> T) async throws -> T {
        let race = Race<T>()
        return try await withCheckedThrowingContinuation { continuation in
            race.install(continuation)
            let handle = Handle { lost in race.start(lost) }
            let work = Task(executorPreference: DispatchTaskExecutor.shared) {
                do {
                    race.finish(.success(try await operation(handle)))
                } catch {
                    race.finish(.failure(error))
                }
            }
            race.setTimer(Task(executorPreference: DispatchTaskExecutor.shared) {
                try? await Task.sleep(for: wait)
                if Task.isCancelled { return }
                if race.expire(Exceeded(reason: "no answer within \(wait)"), evenIfStarted: false) {
                    work.cancel()
                    return
                }
                guard let limit, limit > wait else { return }
                let end = ContinuousClock.now + (limit - wait)
                var lostPolls = 0
                while ContinuousClock.now < end && lostPolls < 2 {
                    try? await Task.sleep(for: pollInterval)
                    if Task.isCancelled { return }
                    lostPolls = race.isLost() ? lostPolls + 1 : 0
                }
                let reason = lostPolls >= 2 ? "the connection closed under it" : "no answer within \(limit)"
                if race.expire(Exceeded(reason: reason), evenIfStarted: true) { work.cancel() }
            })
        }
    }

    /// Who answers first: the operation or the deadline.
    private final class Race<T: Sendable>: Sendable {
        private enum Phase { case waiting, started, done }

        private struct State {
            var phase = Phase.waiting
            var continuation: CheckedContinuation<T, any Error>?
            var timer: Task<Void, Never>?
            var lost: (@Sendable () -> Bool)?
        }

        private let state = Mutex(State())

        func install(_ continuation: CheckedContinuation<T, any Error>) {
            state.withLock { $0.continuation = continuation }
        }

        func setTimer(_ timer: Task<Void, Never>) {
            let finished = state.withLock { state in
                if state.phase == .done { return true }
                state.timer = timer
                return false
            }
            if finished { timer.cancel() }
        }

        func start(_ lost: @escaping @Sendable () -> Bool) -> Bool {
            state.withLock { state in
                guard state.phase == .waiting else { return false }
                state.phase = .started
                state.lost = lost
                return true
            }
        }

        func isLost() -> Bool {
            state.withLock { $0.lost }?() ?? false
        }

        func finish(_ result: Result<T, any Error>) {
            guard let (continuation, timer) = close(when: { $0 != .done }) else { return }
            timer?.cancel()
            continuation?.resume(with: result)
        }

        /// True when the deadline won: the operation had not started (or, `evenIfStarted`,
        /// had not finished).
        func expire(_ error: Exceeded, evenIfStarted: Bool) -> Bool {
            guard let (continuation, _) = close(when: { $0 == .waiting || evenIfStarted && $0 == .started })
            else { return false }
            continuation?.resume(throwing: error)
            return true
        }

        private func close(when allowed: (Phase) -> Bool)
            -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?)?
        {
            state.withLock { state in
                guard allowed(state.phase) else { return nil }
                state.phase = .done
                defer { state = State(phase: .done) }
                return (state.continuation, state.timer)
            }
        }
    }
}
