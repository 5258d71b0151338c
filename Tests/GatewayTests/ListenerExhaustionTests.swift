import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway
#if canImport(Glibc)
import Glibc
#endif

/// Out of descriptors, the listener must wait instead of spinning on `accept`.
@Suite("Listener under descriptor exhaustion")
struct ListenerExhaustionTests {
    /// User + system CPU seconds the process has used (/proc/PID/stat).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func rawConnect(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return fd
    }

    @Test("with every descriptor in use the gateway idles instead of spinning, and accepts again once some are freed")
    func noSpinOnEMFILE() async throws {
        let root = TestGateway.temporaryDirectory()
        let gateway = try DurabilityTests.GatewayProcess(dataDirectory: root + "/data", workingDirectory: root,
                                                         environment: ["CHAT_GATEWAY_SERVER_EVENTLOOPS": "1"],
                                                         maxOpenFiles: 64)
        let pid = gateway.process.pid
        // More connections than the gateway has descriptors left: the rest wait in the backlog.
        var clients = (0..<100).map { _ in Self.rawConnect(gateway.port) }
        defer { for fd in clients where fd >= 0 { close(fd) } }
        try await Task.sleep(for: .milliseconds(500))
        let before = Self.cpuSeconds(pid)
        try await Task.sleep(for: .seconds(2))
        let used = Self.cpuSeconds(pid) - before
        #expect(used < 0.5, "the gateway used \(used) s of CPU in 2 s while out of descriptors")
        #expect(gateway.process.isRunning)
        // Freed descriptors: the waiting and new clients are served.
        for fd in clients where fd >= 0 { close(fd) }
        clients = []
        var healthy = false
        for _ in 0..<50 where !healthy {
            healthy = (try? httpRequest(port: gateway.port, "GET", "/healthz").status) == 200
            if !healthy { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(healthy)
        let metrics = try httpRequest(port: gateway.port, "GET", "/metrics")
        #expect(metrics.body.contains("chat_accept_pauses_total"))
    }
}
