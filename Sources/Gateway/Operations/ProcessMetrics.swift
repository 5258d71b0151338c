import Foundation

/// The process series a Prometheus user expects (`process_*`, as the client libraries of
/// other languages name them) and `chat_build_info`, read from `/proc/self` when `/metrics`
/// is scraped: nothing is sampled in between.
enum ProcessMetrics {
    /// When the process started (s since the epoch), taken once.
    static let startTime: Double = Date().timeIntervalSince1970

    /// The series in Prometheus text, each with its TYPE line (HELP is added by `MetricHelp`).
    static func exposition() -> [UInt8] {
        var text = ""
        func series(_ name: String, _ value: Double, type: String = "gauge", labels: String = "") {
            text += "# TYPE \(name) \(type)\n\(name)\(labels) \(format(value))\n"
        }
        series("chat_build_info", 1, labels: "{version=\"\(GatewayVersion.release)\",protocol=\"\(GatewayVersion.protocolVersion)\"}")
        series("process_start_time_seconds", startTime)
        var usage = rusage()
        if getrusage(RUSAGE_SELF.rawValue, &usage) == 0 {
            let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
            series("process_cpu_seconds_total", cpu, type: "counter")
        }
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
           let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) {
            series("process_resident_memory_bytes", pages * Double(sysconf(Int32(_SC_PAGESIZE))))
        }
        if let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            series("process_open_fds", Double(descriptors.count))
        }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 { series("process_max_fds", Double(limit.rlim_cur)) }
        return Array(text.utf8)
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
