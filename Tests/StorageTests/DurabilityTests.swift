import ChatCore
import Dispatch
import Testing
@testable import SQLiteStorage

@Suite struct DurabilityTests {
    /// Acknowledged messages are on disk: a second store opened on the same
    /// directory while the first is still open (as after a crash: no close,
    /// no checkpoint) finds them all.
    @Test(arguments: [SQLiteStore.Synchronous.full, .normal])
    func acknowledgedMessagesSurviveWithoutClose(synchronous: SQLiteStore.Synchronous) throws {
        let directory = TemporaryDirectory()
        let first = try SQLiteStore(directory: directory.path, synchronous: synchronous)
        for id in ["alice", "bob"] { try first.write(.upsertUser(Fixture.user(id))) }
        try first.write(.createChannel(Fixture.group("c1", ["alice", "bob"])))
        let count = 300
        let acknowledged = Collector<Message>()
        let done = DispatchSemaphore(value: 0)
        for index in 0..<count {
            first.enqueue(.insertMessage(Fixture.message("m\(index)", in: "c1", from: index % 2 == 0 ? "alice" : "bob",
                                                          clientMessageID: "k\(index)"))) { result in
                if case .success(.message(let message)) = result { acknowledged.append(message) }
                done.signal()
            }
        }
        for _ in 0..<count { done.wait() }   // every completion, no flush()
        #expect(acknowledged.all.count == count)

        let second = try SQLiteStore(directory: directory.path, synchronous: synchronous)
        var found: [Message] = []
        var after: Int64 = 0
        while let page = try? second.history("c1", after: after, limit: 100).get(), let last = page.last {
            found += page
            after = last.seq
        }
        #expect(found == acknowledged.all.sorted { $0.seq < $1.seq })
        #expect(found.map(\.seq) == Array(1...Int64(count)))
        let snapshot = try second.loadSnapshot()
        #expect(snapshot.lastMessages.map(\.seq) == [Int64(count)])
        withExtendedLifetime(first) {}
    }
}
