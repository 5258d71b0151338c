import CSQLite
import Storage

/// One prepared statement: bind by 1-based index, step, read columns by 0-based
/// index.
///
/// Bound text is copied into the statement's own buffer and bound `SQLITE_STATIC`: the
/// buffer is reused from one reset to the next, where `SQLITE_TRANSIENT` would make sqlite
/// allocate a copy of every string on every bind. Text that does not fit is bound
/// transient, and the buffer grows at the next reset (up to `maximumBindBytes`).
final class SQLiteStatement {
    private var raw: OpaquePointer?
    private unowned let connection: SQLiteConnection
    /// Text bound since the last reset lives here until the bindings are cleared.
    private var bindBuffer: UnsafeMutableRawPointer?
    private var bindCapacity = 0
    private var bindUsed = 0
    /// What the binds since the last reset needed in all (the buffer's next size).
    private var bindWanted = 0
    static let maximumBindBytes = 64 * 1024

    init(_ raw: OpaquePointer, connection: SQLiteConnection) {
        self.raw = raw
        self.connection = connection
    }

    deinit {
        finalize()
        bindBuffer?.deallocate()
    }

    func finalize() {
        if let raw { sqlite3_finalize(raw) }
        raw = nil
    }

    private var handle: OpaquePointer {
        // Statements are only finalized by their connection's deinit, after
        // which no owner can reach them.
        guard let raw else { preconditionFailure("use of a finalized SQLiteStatement") }
        return raw
    }

    // MARK: binding

    func bind(_ value: Int64, at index: Int32) throws(StoreError) {
        try check(sqlite3_bind_int64(handle, index, value), "bind")
    }

    func bind(_ value: Int, at index: Int32) throws(StoreError) {
        try bind(Int64(value), at: index)
    }

    func bind(_ value: Bool, at index: Int32) throws(StoreError) {
        try bind(Int64(value ? 1 : 0), at: index)
    }

    func bind(_ value: String, at index: Int32) throws(StoreError) {
        var text = value
        let rc = text.withUTF8 { bytes -> Int32 in
            // A nil pointer would bind NULL: bind the empty string explicitly.
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, csqlite_transient())
            }
            bindWanted += bytes.count
            if let buffer = bindBuffer, bindCapacity - bindUsed >= bytes.count {
                let copy = buffer + bindUsed
                copy.copyMemory(from: base, byteCount: bytes.count)
                bindUsed += bytes.count
                // SQLITE_STATIC: the copy stays untouched until `reset` clears the bindings.
                return sqlite3_bind_text(handle, index, copy.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                sqlite3_bind_text(handle, index, chars, Int32(bytes.count), csqlite_transient())
            }
        }
        try check(rc, "bind")
    }

    func bind(_ value: Int64?, at index: Int32) throws(StoreError) {
        if let value { try bind(value, at: index) } else { try check(sqlite3_bind_null(handle, index), "bind") }
    }

    func bind(_ value: String?, at index: Int32) throws(StoreError) {
        if let value { try bind(value, at: index) } else { try check(sqlite3_bind_null(handle, index), "bind") }
    }

    // MARK: stepping

    /// Advances to the next row: true if there is one, false when done.
    @discardableResult
    func step() throws(StoreError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc:
            let error = connection.error(rc, "step \(sql)")
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Clears bindings and rewinds, ending any read the statement held open.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        // No binding points into the buffer any more: reuse it, grown to what was asked.
        if bindWanted > bindCapacity, bindWanted <= Self.maximumBindBytes {
            bindBuffer?.deallocate()
            bindCapacity = min(max(bindWanted, 2 * bindCapacity, 256), Self.maximumBindBytes)
            bindBuffer = UnsafeMutableRawPointer.allocate(byteCount: bindCapacity, alignment: 8)
        }
        bindUsed = 0
        bindWanted = 0
    }

    /// Runs `body`, then resets the statement whatever happened.
    func withReset<T>(_ body: (SQLiteStatement) throws(StoreError) -> T) throws(StoreError) -> T {
        defer { reset() }
        return try body(self)
    }

    /// Steps once a statement that returns no rows (INSERT, UPDATE, DELETE).
    func run() throws(StoreError) {
        defer { reset() }
        while try step() {}
    }

    // MARK: columns

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func bool(_ column: Int32) -> Bool { int64(column) != 0 }

    /// Text of a column ("" for NULL); never assumes a terminating NUL.
    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? {
        isNull(column) ? nil : text(column)
    }

    private var sql: String {
        sqlite3_sql(handle).map { String(cString: $0) } ?? "?"
    }

    private func check(_ rc: Int32, _ context: String) throws(StoreError) {
        if rc != SQLITE_OK { throw connection.error(rc, "\(context) \(sql)") }
    }
}
