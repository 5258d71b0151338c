import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Hands freed heap back to the kernel after connections churn. Each loop's
/// queue runs on whichever Dispatch worker is free, so glibc spreads TLS
/// handshake buffers over per-thread arenas and keeps each at its high-water
/// mark; without a trim, RSS after a burst of short TLS connections stays a
/// third above where it started although nothing leaked, and a burst of
/// handshakes leaves their freed record buffers counted in RSS.
final class MemoryReclaimer: @unchecked Sendable {
    private let churnSinceTrim = Atomic<Int>(0)
    private let timer: DispatchSourceTimer
    private let threshold: Int

    init(interval: DispatchTimeInterval = .seconds(5), threshold: Int = 256) {
        self.threshold = threshold
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        timer.setEventHandler { [weak self] in self?.trimIfChurned() }
        timer.resume()
    }

    private func trimIfChurned() {
        guard churnSinceTrim.load(ordering: .relaxed) >= threshold else { return }
        churnSinceTrim.store(0, ordering: .relaxed)
        _ = glibcMallocTrim(0)
    }

    deinit { timer.cancel() }

    /// A connection opened or closed.
    func connectionChurned() {
        churnSinceTrim.wrappingAdd(1, ordering: .relaxed)
    }
}

/// glibc's `malloc_trim` (declared in <malloc.h>, which the Glibc module does not export).
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
