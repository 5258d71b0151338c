import ChatCore
import Logging
import PostgresNIO
import Testing
@testable import PostgresStorage
import ServiceTestSupport
import Storage

/// `changes` on PostgreSQL: the same pages as `ChangeLogTests` checks on SQLite, after
/// every version, from what the writes answered and from rows written before migration 5.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "CHAT_TEST_POSTGRES_URL is not set"), .serialized)
struct PostgresChangeLogTests {
    private static let logger = Logger(label: "postgres-changelog-tests")

    @Test(arguments: 1...3)
    func everyPageAfterEveryVersionMatchesTheWrites(seed: UInt64) async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore.open(url: database.url, logger: Self.logger)
            for id in ["alice", "bob", "carol"] { try await store.writeAsync(.upsertUser(Fixture.user(id))) }
            try await store.writeAsync(.createChannel(Fixture.group("c1", ["alice", "bob", "carol"])))
            var script = ChangeLogScript(seed: seed)
            for _ in 0..<100 { script.record(await store.commitAsync(script.nextWrite())) }
            try await script.model.checkEveryPage(limits: [1, 3, 100]) { after, limit, viewer in
                try await store.changesAsync("c1", viewer: viewer, after: after, limit: limit)
            }
            // Every magnitude a client may send: nothing after, not a bigint overflow.
            for after in [Int64.max, Int64.max - 1] {
                #expect(try await store.changesAsync("c1", viewer: "alice", after: after, limit: 100).isEmpty)
                #expect(try await store.changesAsync("nope", viewer: "alice", after: after, limit: 100).isEmpty)
            }
        }
    }

    @Test(arguments: 1...2)
    func rowsFromBeforeMigrationFiveReadAsBefore(seed: UInt64) async throws {
        try await PostgresTestDatabase.with { database in
            let legacy = LegacyChangeLog(seed: seed, steps: 120)
            try await PostgresTestDatabase.withClient(url: database.url) { client in
                for migration in PostgresSchema.migrations.prefix(4) {
                    for statement in migration.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                        try await client.query(PostgresQuery(unsafeSQL: String(statement)))
                    }
                }
                try await client.query("CREATE TABLE chat_schema (version integer NOT NULL)")
                try await client.query("INSERT INTO chat_schema (version) VALUES (4)")
                for statement in legacy.statements { try await client.query(PostgresQuery(unsafeSQL: statement)) }
            }
            let store = try await PostgresStore.open(url: database.url, logger: Self.logger)
            try await legacy.model.checkEveryPage(limits: [1, 2, 7, 100]) { after, limit, viewer in
                try await store.changesAsync("c1", viewer: viewer, after: after, limit: limit)
            }
        }
    }
}

extension PostgresStore {
    func changesAsync(_ channelID: ChannelID, viewer: UserID, after: Int64, limit: Int) async throws -> [Message] {
        try await withCheckedContinuation { continuation in
            changes(channelID: channelID, viewer: viewer, afterVersion: after, limit: limit) {
                continuation.resume(returning: $0)
            }
        }.get()
    }
}
