#if canImport(Glibc)
import Glibc
#endif

/// The process's own CPU time (getrusage), to show what the tool itself cost.
struct CPUTime: Sendable {
    var user: Double
    var system: Double

    var total: Double { user + system }

    static func now() -> CPUTime {
        var usage = rusage()
        _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return CPUTime(user: seconds(usage.ru_utime), system: seconds(usage.ru_stime))
    }

    private static func seconds(_ value: timeval) -> Double {
        Double(value.tv_sec) + Double(value.tv_usec) / 1e6
    }

    static func - (lhs: CPUTime, rhs: CPUTime) -> CPUTime {
        CPUTime(user: lhs.user - rhs.user, system: lhs.system - rhs.system)
    }
}
