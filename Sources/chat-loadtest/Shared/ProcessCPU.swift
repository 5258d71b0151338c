#if canImport(Glibc)
import Glibc
#endif

/// Another process's CPU time, all its threads, from /proc/PID/stat (`utime` + `stime`, in
/// clock ticks, 10 ms here): what the gateway spent over a phase of a run.
struct ProcessCPU: Sendable {
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

    private static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = fread(&buffer, 1, buffer.count, file)
        return n > 0 ? Array(buffer[..<n]) : nil
    }
}
