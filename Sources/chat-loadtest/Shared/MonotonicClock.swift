#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds: the send stamp embedded in every message
/// text and the receive time it is compared with (same process, same clock).
enum MonotonicClock {
    @inline(__always)
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Sleeps until `deadline` (a `now()` value); returns at once when it has passed.
    static func sleep(until deadline: UInt64) {
        let current = now()
        guard deadline > current else { return }
        let delta = deadline - current
        var request = timespec(tv_sec: Int(delta / 1_000_000_000), tv_nsec: Int(delta % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64(max(0, seconds) * 1e9)
    }
}
