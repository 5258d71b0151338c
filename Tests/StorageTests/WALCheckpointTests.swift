import ChatCore
import Dispatch
import Foundation
import Testing
@testable import SQLiteStorage

@Suite struct WALCheckpointTests {
    /// Commits past the threshold leave the database file alone (no commit
    /// carries a checkpoint); the checkpoint runs on its own queue, after which
    /// the writer reuses the WAL from its start instead of growing it.
    @Test func checkpointRunsBesideTheWriterAndTheWALRestarts() throws {
        let directory = TemporaryDirectory()
        let checkpoints = DispatchQueue(label: "test.checkpoint")
        checkpoints.suspend()
        let store = try storeWithChannel(at: directory.path, synchronous: .full, checkpointFrames: 32,
                                         limitFrames: .max, checkpoints: checkpoints)
        let database = store.databasePath
        let wal = database + "-wal"
        let databaseBefore = try fileSize(database)

        for index in 0..<200 {   // one commit each, several frames per commit
            try store.write(.insertMessage(Fixture.message("m\(index)", in: "c1", from: "alice")))
        }
        #expect(try fileSize(database) == databaseBefore, "a commit checkpointed inline")
        let walBefore = try fileSize(wal)
        #expect(walBefore > 32 * 4096)

        checkpoints.resume()
        checkpoints.sync {}   // the checkpoint enqueued by the first commit past the threshold
        #expect(try fileSize(database) > databaseBefore)

        for index in 200..<205 {
            try store.write(.insertMessage(Fixture.message("m\(index)", in: "c1", from: "bob")))
        }
        #expect(try fileSize(wal) == walBefore, "the WAL grew instead of restarting")
        let found = try store.history("c1", after: 0, limit: 500).get()
        #expect(found.map(\.seq) == Array(1...205))
    }

    /// A pass beside the writer always ends a few commits behind, so without the
    /// writer copying that remainder the WAL never restarts and grows with every
    /// commit (3,000 commits in a loop: about 10,000 frames, 42 MB). Here the
    /// frames that land during the pass are made deterministic: a reader holds the
    /// pass to the frames before them, as if they had landed while it ran.
    @Test func theWriterCopiesWhatAPassLeftAndTheWALRestarts() throws {
        let directory = TemporaryDirectory()
        let checkpoints = DispatchQueue(label: "test.checkpoint")
        checkpoints.suspend()
        defer { checkpoints.resume() }
        let store = try storeWithChannel(at: directory.path, checkpointFrames: 64, limitFrames: .max,
                                         checkpoints: checkpoints)
        var next = 0
        func commit(_ count: Int) throws {
            for _ in 0..<count {
                try store.write(.insertMessage(Fixture.message("m\(next)", in: "c1", from: "alice")))
                next += 1
            }
        }
        try commit(40)   // past the threshold: one pass queued
        let reader = try SQLiteConnection(path: store.databasePath)
        try reader.execute("BEGIN; SELECT count(*) FROM messages;")
        try commit(10)   // the frames the pass will not copy
        checkpoints.resume()
        checkpoints.sync {}
        checkpoints.suspend()   // a pass queued from now on never runs
        try reader.execute("COMMIT")

        try commit(1)   // a few dozen frames past the pass: the writer copies them
        let wal = store.databasePath + "-wal"
        let walAfterCatchUp = try fileSize(wal)
        try commit(5)
        #expect(try fileSize(wal) == walAfterCatchUp, "the WAL grew instead of restarting")
        let found = try store.history("c1", after: 0, limit: 100).get()
        #expect(found.map(\.seq) == Array(1...56))
    }

    /// On a saturated core the passes beside the writer hardly run (background
    /// priority): past the limit the writer copies the WAL itself. Here the
    /// passes never run at all; without the limit the WAL holds every commit
    /// (about 10,000 frames).
    @Test func theWriterCheckpointsAtTheLimitWhenPassesDoNotRun() throws {
        let directory = TemporaryDirectory()
        let checkpoints = DispatchQueue(label: "test.checkpoint")
        checkpoints.suspend()
        defer { checkpoints.resume(); checkpoints.sync {} }
        let store = try storeWithChannel(at: directory.path, checkpointFrames: 64, limitFrames: 256,
                                         checkpoints: checkpoints)
        let commits = 3_000
        for index in 0..<commits {
            try store.write(.insertMessage(Fixture.message("m\(index)", in: "c1", from: "alice")))
        }
        let walFrames = try fileSize(store.databasePath + "-wal") / (4096 + 24)
        #expect(walFrames <= 512, "the WAL grew to \(walFrames) frames over \(commits) commits")
        let found = try store.history("c1", after: 0, limit: 3_000).get()
        #expect(found.map(\.seq) == Array(1...3_000))
    }

    /// A store whose checkpoints run on `checkpoints`, holding alice and bob in group c1.
    private func storeWithChannel(at directory: String, synchronous: SQLiteStore.Synchronous = .normal,
                                  checkpointFrames: Int32, limitFrames: Int32,
                                  checkpoints: DispatchQueue) throws -> SQLiteStore {
        let store = try SQLiteStore(directory: directory, synchronous: synchronous, readerCount: 1, beforeCommit: nil,
                                    checkpointFrames: checkpointFrames, checkpointLimitFrames: limitFrames,
                                    checkpointQueue: checkpoints)
        for id in ["alice", "bob"] { try store.write(.upsertUser(Fixture.user(id))) }
        try store.write(.createChannel(Fixture.group("c1", ["alice", "bob"])))
        return store
    }

    private func fileSize(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }
}
