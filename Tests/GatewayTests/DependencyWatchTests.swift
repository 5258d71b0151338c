import Logging
import Synchronization
import Testing
@testable import Gateway

@Suite struct DependencyWatchTests {
    /// A probe that answers what the test says.
    final class Switch: Sendable {
        let up = Atomic<Bool>(true)
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(condition())
    }

    @Test func reportsADependencyDownAndBackUp() async throws {
        let postgres = Switch()
        let watch = DependencyWatch(
            probes: [.init(name: "postgres", isReachable: { postgres.up.load(ordering: .relaxed) })],
            interval: .milliseconds(10), logger: Logger(label: "test"))
        defer { watch.stop() }
        #expect(watch.unreachable.isEmpty)
        postgres.up.store(false, ordering: .relaxed)
        try await waitUntil { watch.unreachable == ["postgres"] }
        postgres.up.store(true, ordering: .relaxed)
        try await waitUntil { watch.unreachable.isEmpty }
    }
}
