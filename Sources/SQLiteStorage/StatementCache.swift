/// Prepared statements of one connection, keyed by their SQL text.
///
/// Statements are prepared once (`SQLITE_PREPARE_PERSISTENT`) and reused for
/// every batch or query; the hot paths (insert message, history page) never
/// parse SQL again.
struct StatementCache {
    private var bySQL: [String: SQLiteStatement] = [:]

    subscript(sql: String) -> SQLiteStatement? {
        get { bySQL[sql] }
        set { bySQL[sql] = newValue }
    }

    /// Finalizes every statement (before the connection closes).
    mutating func removeAll() {
        for statement in bySQL.values { statement.finalize() }
        bySQL.removeAll()
    }
}
