#if canImport(Glibc)
import Glibc
#endif

/// Another process's CPU time, all its threads, from /proc/PID/stat (`utime` + `stime`, in
/// clock ticks, 10 ms here): what the gateway spent over a phase of the storm; and, for a
/// process pinned to one core, how busy that core was, which on a shared machine says how
/// much of it others took.
struct StormProcessCPU: Sendable {
    let pid: Int32
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Seconds of CPU so far, nil when the process is gone or unreadable.
    func seconds() -> Double? {
        guard let text = Self.read("/proc/\(pid)/stat") else { return nil }
        // The command name (field 2) may hold spaces and parentheses: fields 3… follow the last ")".
        guard let close = text.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = text[(close + 1)...].split(separator: UInt8(ascii: " "))
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(String(decoding: fields[11], as: UTF8.self)),
              let system = Double(String(decoding: fields[12], as: UTF8.self)) else { return nil }
        return (user + system) / Self.ticksPerSecond
    }

    /// Busy seconds so far of the one CPU the process is pinned to (/proc/stat), nil unless
    /// it is pinned to exactly one: what is busy there and not the process is others' load.
    func pinnedCoreBusySeconds() -> Double? {
        guard let status = Self.read("/proc/\(pid)/status").map({ String(decoding: $0, as: UTF8.self) }),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }),
              let cpu = Int(line.dropFirst("Cpus_allowed_list:".count).trimmingPrefix(while: { $0 == " " || $0 == "\t" })),
              let stat = Self.read("/proc/stat").map({ String(decoding: $0, as: UTF8.self) }),
              let row = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu\(cpu) ") }) else { return nil }
        // user nice system idle iowait irq softirq steal …: everything but idle and iowait is busy.
        let ticks = row.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 8 else { return nil }
        return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]) / Self.ticksPerSecond
    }

    private static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 16384)
        let n = fread(&buffer, 1, buffer.count, file)
        return n > 0 ? Array(buffer[..<n]) : nil
    }
}
