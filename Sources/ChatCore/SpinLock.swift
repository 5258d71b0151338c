import Synchronization

/// A small lock for state read from several threads (clocks, counters).
final class SpinLock: Sendable {
    private let mutex = Mutex<Void>(())

    func withLock<T>(_ body: () -> T) -> T {
        mutex.withLock { _ in body() }
    }
}
