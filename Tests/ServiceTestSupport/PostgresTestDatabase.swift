import ChatCore
import Foundation
import Logging
import PostgresNIO
import Synchronization
import PostgresStorage
import Storage

/// A fresh database per test on the server `CHAT_TEST_POSTGRES_URL` names (scripts/test
/// starts one with scripts/postgres when PostgreSQL is installed; CI always does).
/// The suites that need it are skipped when the variable is unset.
public struct PostgresTestDatabase: Sendable {
    public static let baseURL: String? = {
        let url = ProcessInfo.processInfo.environment["CHAT_TEST_POSTGRES_URL"] ?? ""
        return url.isEmpty ? nil : url
    }()

    public static var isAvailable: Bool { baseURL != nil }

    public let name: String
    public let url: String

    /// Creates `chat_test_<random>` on the test server.
    public static func make() async throws -> PostgresTestDatabase {
        guard let base = baseURL, var components = URLComponents(string: base) else {
            throw StoreError("CHAT_TEST_POSTGRES_URL is not set")
        }
        let name = "chat_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try await admin { try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)")) }
        components.path = "/" + name
        return PostgresTestDatabase(name: String(name), url: components.string ?? base)
    }

    /// Runs `body` on a fresh database, dropped afterwards whether `body` threw or not.
    public static func with(_ body: (PostgresTestDatabase) async throws -> Void) async throws {
        let database = try await make()
        do {
            try await body(database)
        } catch {
            await database.drop()
            throw error
        }
        await database.drop()
    }

    public func drop() async {
        let name = self.name
        try? await Self.admin { try await $0.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")) }
    }

    /// Runs `body` with a client on the base database (for CREATE/DROP DATABASE and faults).
    public static func admin(_ body: @Sendable (PostgresClient) async throws -> Void) async throws {
        try await withClient(url: baseURL ?? "", body)
    }

    /// Runs `body` with a client on `url`.
    public static func withClient(url: String, _ body: @Sendable (PostgresClient) async throws -> Void) async throws {
        let client = PostgresClient(configuration: try PostgresStore.clientConfiguration(url: url))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addImmediateTask { await client.run() }
            defer { group.cancelAll() }
            try await body(client)
        }
    }
}

extension PostgresStore {
    // Test helpers: the async twins of the blocking ones in StorageTests.
    /// Enqueues `write` and waits for its completion without blocking a thread.
    public func commitAsync(_ write: StoreWrite) async -> Result<StoreWriteResult, StoreError> {
        await withCheckedContinuation { continuation in
            enqueue(write) { continuation.resume(returning: $0) }
        }
    }

    public func writeAsync(_ write: StoreWrite) async throws {
        _ = try await commitAsync(write).get()
    }

    public func historyAsync(_ channelID: ChannelID, viewer: UserID = "nobody", before: Int64? = nil, after: Int64? = nil,
                      limit: Int = 1_000) async throws -> [Message] {
        try await withCheckedContinuation { continuation in
            history(channelID: channelID, viewer: viewer, beforeSeq: before, afterSeq: after, limit: limit, thread: nil) {
                continuation.resume(returning: $0)
            }
        }.get()
    }

    public func lookupAsync(sender: UserID, clientMessageID: String) async throws -> Message? {
        try await withCheckedContinuation { continuation in
            message(sender: sender, clientMessageID: clientMessageID) { continuation.resume(returning: $0) }
        }.get()
    }
}

extension PostgresTestDatabase {
    /// Runs `body` inside BEGIN … COMMIT on one connection to `url`.
    public static func transaction<T: Sendable>(url: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        let result = ResultBox<T>()
        try await withClient(url: url) { client in
            let value = try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: Logger(label: "test"))
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: Logger(label: "test"))
                return value
            }
            result.set(value)
        }
        guard let value = result.get() else { throw StoreError("transaction returned nothing") }
        return value
    }
}

private final class ResultBox<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)
    func set(_ new: T) { value.withLock { $0 = new } }
    func get() -> T? { value.withLock { $0 } }
}
