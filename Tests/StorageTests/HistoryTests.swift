import ChatCore
import Dispatch
import Storage
import Synchronization
import Testing
@testable import SQLiteStorage

@Suite struct HistoryTests {
    /// c1 holds seq 1...10; seq 3 and 7 are hidden from bob.
    private func seededHistory(_ directory: borrowing TemporaryDirectory) throws -> SQLiteStore {
        let store = try Fixture.seeded(directory)
        for index in 1...10 {
            let hidden: UserID? = index == 3 || index == 7 ? "bob" : nil
            _ = try #require(store.store(Fixture.message("m\(index)", in: "c1", from: "alice", hiddenFrom: hidden)))
        }
        return store
    }

    @Test func pagesBeforeAfterAndNewest() throws {
        let directory = TemporaryDirectory()
        let store = try seededHistory(directory)
        #expect(store.seqs("c1", limit: 3) == [8, 9, 10])
        #expect(store.seqs("c1", before: 5, limit: 3) == [2, 3, 4])
        #expect(store.seqs("c1", before: 3, limit: 10) == [1, 2])
        #expect(store.seqs("c1", after: 5, limit: 3) == [6, 7, 8])
        #expect(store.seqs("c1", after: 8, limit: 10) == [9, 10])
        #expect(store.seqs("c1", after: 10, limit: 10) == [])
        #expect(store.seqs("c1", after: 0, limit: 100) == Array(1...10))
        #expect(store.seqs("c1", before: 9, after: 2, limit: 3) == [3, 4, 5])
        #expect(store.seqs("c1", limit: 0) == [])
        #expect(store.seqs("other", limit: 10) == [])
        let page = try store.history("c1", limit: 1).get()
        #expect(page.first?.id == "m10" && page.first?.text == "text of m10")
    }

    @Test func hiddenMessagesAreLeftOutForTheirViewerOnly() throws {
        let directory = TemporaryDirectory()
        let store = try seededHistory(directory)
        #expect(store.seqs("c1", viewer: "bob", limit: 100) == [1, 2, 4, 5, 6, 8, 9, 10])
        #expect(store.seqs("c1", viewer: "bob", before: 5, limit: 3) == [1, 2, 4])
        #expect(store.seqs("c1", viewer: "bob", after: 5, limit: 3) == [6, 8, 9])
        #expect(store.seqs("c1", viewer: "alice", before: 5, limit: 3) == [2, 3, 4])
        #expect(store.seqs("c1", viewer: "carol", after: 5, limit: 3) == [6, 7, 8])
    }

    /// `message.changes` reads (§15): a row stored hidden from the viewer is never read for it,
    /// and a page's limit counts only the rows it may see. The engine would drop such a row too
    /// (`MessageViewer.sees`), so only this test catches a query that forgets the filter
    /// (`scripts/mutation-check`, `changes-query-keeps-hidden`).
    @Test func changesLeaveOutHiddenMessagesForTheirViewerOnly() throws {
        let directory = TemporaryDirectory()
        let store = try seededHistory(directory)
        #expect(try store.changedSeqs("c1", viewer: "bob", limit: 100) == [1, 2, 4, 5, 6, 8, 9, 10])
        #expect(try store.changedSeqs("c1", viewer: "bob", limit: 3) == [1, 2, 4])
        #expect(try store.changedSeqs("c1", viewer: "alice", limit: 100) == Array(1...10))
        #expect(try store.changedSeqs("c1", viewer: "carol", limit: 3) == [1, 2, 3])
    }

    @Test func readsSeeEveryAcknowledgedWrite() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        for index in 1...50 {
            let stored = try #require(store.store(Fixture.message("m\(index)", in: "c1", from: "bob")))
            #expect(store.seqs("c1", limit: 1) == [stored.seq])
        }
    }
}

private extension SQLiteStore {
    /// The seqs `changes` reads for `viewer` from the channel's first version on.
    func changedSeqs(_ channelID: ChannelID, viewer: UserID, limit: Int) throws -> [Int64] {
        let result = Mutex<Result<[Message], StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        changes(channelID: channelID, viewer: viewer, afterVersion: 0, limit: limit) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try (result.withLock { $0 } ?? .failure(StoreError("no result"))).get().map(\.seq)
    }
}
