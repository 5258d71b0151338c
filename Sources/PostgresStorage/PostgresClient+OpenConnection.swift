import PostgresNIO

extension PostgresClient {
    /// `body` on a pooled connection that is open (three leases at most): postgres-nio may
    /// lease a connection the server has just closed, and never answers a query sent on it.
    func withOpenConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await withConnection { connection in
                    guard !connection.isClosed else { throw PostgresErrors.ClosedBeforeUse() }
                    return try await body(connection)
                }
            } catch is PostgresErrors.ClosedBeforeUse where attempt < 3 {
                continue
            }
        }
    }
}
