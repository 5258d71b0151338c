import ChatCore
import Foundation
import Storage

/// The SQLite `Store`: `DIR/chat.sqlite` in WAL mode, one group-commit writer
/// connection, and a small pool of reader connections.
///
/// Durability: a completion reporting success runs only after the COMMIT of
/// the batch holding the write returned. With `synchronous = FULL` (the
/// default) the WAL is fsynced at each commit, so the write survives a kill of
/// the process and a power loss. With `.normal` it survives a kill of the
/// process (the WAL is in the OS page cache), but an OS crash or power loss can
/// lose the last commits.
///
/// One `SQLiteStore` per database: the writer keeps the channels' `seq`
/// counters in memory.
public final class SQLiteStore: Store {
    /// `PRAGMA synchronous` of the writer connection.
    public enum Synchronous: String, Sendable {
        /// WAL synced at every commit: survives process kill and power loss.
        case full = "FULL"
        /// WAL synced at checkpoints only: survives process kill, not power loss.
        case normal = "NORMAL"
    }

    public let databasePath: String
    private let writer: GroupCommitWriter
    private let readers: ReaderPool

    /// Opens (creating if needed) `directory/chat.sqlite` with the default
    /// durability (`.full`).
    public convenience init(directory: String) throws(StoreError) {
        try self.init(directory: directory, synchronous: .full)
    }

    /// - Parameters:
    ///   - synchronous: the writer's `PRAGMA synchronous`.
    ///   - readerCount: reader connections (each with its own queue).
    ///   - commitObserver: told the size and duration of every committed batch (metrics).
    public convenience init(directory: String, synchronous: Synchronous, readerCount: Int = 2,
                            commitObserver: GroupCommitWriter.CommitObserver? = nil) throws(StoreError) {
        try self.init(directory: directory, synchronous: synchronous, readerCount: readerCount, beforeCommit: nil,
                      commitObserver: commitObserver)
    }

    /// `beforeCommit` runs in each batch's transaction just before COMMIT;
    /// throwing fails the batch (fault injection for tests).
    /// `checkpointFrames`: the WAL size (frames) that starts a checkpoint on `checkpointQueue`;
    /// at `checkpointLimitFrames` (default three times that) the writer checkpoints itself.
    /// The queue is `.background` (nice 10 on Linux): sharing a core with the event loop at
    /// `.utility` (nice 2), each checkpoint took half the core for a moment and stalled
    /// deliveries 100–160 ms (`rooms` open loop 18,000 msgs/s: p99 44–108 ms → 13–22 ms).
    init(directory: String, synchronous: Synchronous, readerCount: Int,
         beforeCommit: GroupCommitWriter.CommitHook?, commitObserver: GroupCommitWriter.CommitObserver? = nil,
         checkpointFrames: Int32 = 4096, checkpointLimitFrames: Int32? = nil,
         checkpointQueue: DispatchQueue = DispatchQueue(label: "chat.store.checkpoint", qos: .background)) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError("cannot create directory \(directory): \(error.localizedDescription)")
        }
        let path = (directory as NSString).appendingPathComponent("chat.sqlite")
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA busy_timeout = 5000")
        let journalMode = try connection.textPragma("journal_mode = WAL")
        guard journalMode.lowercased() == "wal" else {
            throw StoreError("cannot switch \(path) to WAL (journal_mode is \(journalMode))")
        }
        try connection.execute("""
            PRAGMA synchronous = \(synchronous.rawValue);
            PRAGMA foreign_keys = ON;
            PRAGMA cache_size = -32768;
            PRAGMA journal_size_limit = 67108864;
            """)
        try Migrations.apply(on: connection)
        self.databasePath = path
        self.readers = try ReaderPool(path: path, count: readerCount, label: "chat.store.reader")
        let checkpointer = try WALCheckpointer(path: path, synchronous: synchronous, thresholdFrames: checkpointFrames,
                                               limitFrames: checkpointLimitFrames, queue: checkpointQueue)
        self.writer = GroupCommitWriter(connection: connection, label: "chat.store.writer", checkpointer: checkpointer,
                                        beforeCommit: beforeCommit, commitObserver: commitObserver)
    }

    public func loadSnapshot() throws(StoreError) -> StoreSnapshot {
        try readers.sync { connection throws(StoreError) in try ReadQueries.snapshot(on: connection) }
    }

    public func streams(of channels: [ChannelID], completion: @escaping @Sendable (Result<ChannelStreams, StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.streams(on: connection, of: channels)
        }, completion: completion)
    }

    public func enqueue(_ write: StoreWrite,
                        completion: @escaping @Sendable (Result<StoreWriteResult, StoreError>) -> Void) {
        writer.enqueue(write, completion: completion)
    }

    public func history(channelID: ChannelID, viewer: UserID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int, thread: Int64?,
                        completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.history(on: connection, channelID: channelID, viewer: viewer,
                                    beforeSeq: beforeSeq, afterSeq: afterSeq, limit: limit, thread: thread)
        }, completion: completion)
    }

    public func changes(channelID: ChannelID, viewer: UserID, afterVersion: Int64, limit: Int,
                        completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.changes(on: connection, channelID: channelID, viewer: viewer, afterVersion: afterVersion, limit: limit)
        }, completion: completion)
    }

    public func attributions(channelID: ChannelID, seqs: ClosedRange<Int64>, users: Set<UserID>, viewer: UserID,
                             completion: @escaping @Sendable (Result<MessageAttributions, StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.attributions(on: connection, channelID: channelID, seqs: seqs, users: users, viewer: viewer)
        }, completion: completion)
    }

    public func messageStates(channelID: ChannelID, seqs: [Int64],
                              completion: @escaping @Sendable (Result<[MessageState], StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.messageStates(on: connection, channelID: channelID, seqs: seqs)
        }, completion: completion)
    }

    public func message(sender: UserID, clientMessageID: String,
                        completion: @escaping @Sendable (Result<Message?, StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.message(on: connection, sender: sender, clientMessageID: clientMessageID)
        }, completion: completion)
    }

    public func users(_ ids: [UserID], completion: @escaping @Sendable (Result<[User], StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.users(on: connection, ids)
        }, completion: completion)
    }

    public func flags(limit: Int, afterID: Int64?, completion: @escaping @Sendable (Result<[Flag], StoreError>) -> Void) {
        readers.async({ connection throws(StoreError) in
            try ReadQueries.flags(on: connection, limit: limit, afterID: afterID)
        }, completion: completion)
    }

    public func flush() {
        writer.flush()
    }
}
