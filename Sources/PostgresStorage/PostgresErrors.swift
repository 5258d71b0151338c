import PostgresNIO

/// Readable one-line descriptions of postgres-nio errors (its own `description`
/// hides the server's message to keep secrets out of logs; ours carry no secret).
enum PostgresErrors {
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let server = error.serverInfo {
            let state = server[.sqlState] ?? "?"
            let message = server[.message] ?? "?"
            return "postgres \(state): \(message)"
        }
        return "postgres: \(error.code)"
    }

    /// A pooled connection that was already closed when the pool handed it out.
    struct ClosedBeforeUse: Error, CustomStringConvertible {
        var description: String { "the pooled PostgreSQL connection was already closed" }
    }

    /// A refusal by the server of this transaction (a constraint, a deadlock, a serialisation
    /// failure): worth one retry of the batch. Anything else is a lost or unusable connection.
    static func isServerRefusal(_ error: any Error) -> Bool {
        (error as? PSQLError)?.code == .server && !isConnectionLoss(error)
    }

    /// The connection went away under a query (the server closed or terminated it:
    /// SQLSTATE class 08, 57P01–57P03), as opposed to a refusal of what was sent on it.
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if error is ClosedBeforeUse { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown:
            return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default:
            return false
        }
    }
}
