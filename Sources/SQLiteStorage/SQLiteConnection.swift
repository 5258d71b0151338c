import CSQLite
import Storage

/// A thin wrapper around one `sqlite3*` handle.
///
/// Not thread-safe: a connection is confined to one owner (the group-commit
/// writer or one reader) which reaches it through a `Mutex`. Prepared
/// statements are cached per SQL text and reused; `deinit` finalizes them and
/// closes the handle.
final class SQLiteConnection {
    private let handle: OpaquePointer
    private var statements = StatementCache()
    let path: String

    /// Opens (creating if needed) the database at `path`. The handle is opened in
    /// multi-thread mode (`NOMUTEX`): its owner serializes every use.
    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard let db else { throw StoreError("sqlite3_open_v2(\(path)) failed (\(rc)): out of memory") }
        guard rc == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close_v2(db)
            throw StoreError("cannot open \(path): \(message) (\(rc))")
        }
        sqlite3_extended_result_codes(db, 1)
        self.handle = db
        self.path = path
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more SQL statements that return no rows of interest.
    func execute(_ sql: String) throws(StoreError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? errorText
            sqlite3_free(errorMessage)
            throw StoreError("\(message) (\(rc)) in: \(sql)")
        }
    }

    /// A prepared statement for `sql`, reused across calls. The caller must
    /// `reset()` it when done (``SQLiteStatement`` does so in `withReset`).
    func statement(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        let statement = try prepare(sql)
        statements[sql] = statement
        return statement
    }

    /// A new prepared statement, not cached.
    func prepare(_ sql: String) throws(StoreError) -> SQLiteStatement {
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, "prepare \(sql)") }
        return SQLiteStatement(raw, connection: self)
    }

    /// The value of a pragma that returns one integer row (e.g. `user_version`).
    func integerPragma(_ name: String) throws(StoreError) -> Int64 {
        let statement = try prepare("PRAGMA \(name)")
        guard try statement.step() else { throw StoreError("PRAGMA \(name) returned no row") }
        return statement.int64(0)
    }

    /// The value of a pragma that returns one text row (e.g. `journal_mode=WAL`).
    func textPragma(_ assignment: String) throws(StoreError) -> String {
        let statement = try prepare("PRAGMA \(assignment)")
        guard try statement.step() else { throw StoreError("PRAGMA \(assignment) returned no row") }
        return statement.text(0)
    }

    /// Installs `hook`, called after every commit with the WAL's frame count. It
    /// replaces SQLite's automatic checkpoint on this connection.
    func setWALHook(_ hook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32,
                    context: UnsafeMutableRawPointer) {
        sqlite3_wal_hook(handle, hook, context)
    }

    /// A PASSIVE checkpoint: copies what WAL frames it can into the database
    /// file without waiting for readers or the writer.
    func checkpointPassive() throws(StoreError) -> CheckpointProgress {
        guard let progress = Self.checkpointPassive(handle) else {
            throw error(sqlite3_errcode(handle), "wal_checkpoint(PASSIVE)")
        }
        return progress
    }

    /// The same on a raw handle, for the WAL hook, which is handed one; nil on failure.
    static func checkpointPassive(_ handle: OpaquePointer) -> CheckpointProgress? {
        var walFrames: Int32 = 0
        var copiedFrames: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &walFrames, &copiedFrames)
        return rc == SQLITE_OK ? CheckpointProgress(walFrames: walFrames, copiedFrames: copiedFrames) : nil
    }

    /// What a checkpoint left: the WAL's size in frames and how many of them are in the database file.
    struct CheckpointProgress {
        var walFrames: Int32
        var copiedFrames: Int32
        var remainingFrames: Int32 { walFrames - copiedFrames }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// True outside an explicit transaction.
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// The last error message of this connection.
    var errorText: String { String(cString: sqlite3_errmsg(handle)) }

    /// A `StoreError` for result code `rc`, with sqlite's message.
    func error(_ rc: Int32, _ context: String) -> StoreError {
        StoreError("sqlite error \(rc) (\(errorText)) during \(context)")
    }
}
