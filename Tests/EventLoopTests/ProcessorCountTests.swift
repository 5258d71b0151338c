import Foundation
import Testing

@testable import EventLoop

@Suite("Processor count")
struct ProcessorCountTests {
    /// The kernel's own account of the affinity mask, `Cpus_allowed_list` in /proc/self/status ("0-1,4").
    private static func allowedCPUsFromProc() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let list = line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
        return try list.split(separator: ",").reduce(0) { count, range in
            let bounds = range.split(separator: "-").compactMap { Int($0) }
            let first = try #require(bounds.first), last = try #require(bounds.last)
            return count + last - first + 1
        }
    }

    @Test func schedulableCountIsTheAffinityMask() throws {
        #expect(EventLoopGroup.schedulableProcessorCount == (try Self.allowedCPUsFromProc()))
    }
}
