import ChatCore
import Logging
import PostgresNIO
import Testing
@testable import PostgresStorage
import ServiceTestSupport
import Storage
import Synchronization

/// The moderation model (§16) on PostgreSQL: the same fixtures and answers as
/// `ModerationStorageTests` on SQLite, plus flag ids that stay unique and ascending when
/// two nodes store flags at once.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "CHAT_TEST_POSTGRES_URL is not set"), .serialized)
struct PostgresModerationTests {
    private static let logger = Logger(label: "postgres-moderation-tests")

    private func open(_ database: PostgresTestDatabase) async throws -> PostgresStore {
        try await PostgresStore.open(url: database.url, logger: Self.logger)
    }

    private func seed(_ store: PostgresStore) async throws {
        for id in ["alice", "bob", "carol"] { try await store.writeAsync(.upsertUser(Fixture.user(id))) }
        try await store.writeAsync(.createChannel(Fixture.group("c1", ["alice", "bob", "carol"])))
    }

    @Test func moderationFieldsRoundTripThroughReopen() async throws {
        try await PostgresTestDatabase.with { database in
            do {
                let store = try await open(database)
                for write in ModerationFixture.writes { #expect(ModerationFixture.isWritten(try await store.commitAsync(write).get())) }
            }
            let reopened = try await open(database)
            let snapshot = try reopened.loadSnapshot()
            #expect(snapshot.users == ModerationFixture.users)
            #expect(snapshot.channels == ModerationFixture.channels)
            let read = try await answer { reopened.users(["erin", "alice", "carol", "nobody"], completion: $0) }
            #expect(read.sorted { $0.id < $1.id } == ModerationFixture.users.filter { ["alice", "carol", "erin"].contains($0.id) })
        }
    }

    @Test func flagsTakeAscendingIdsAndPageByThem() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await open(database)
            try await seed(store)
            var stored: [Flag] = []
            for flag in ModerationFixture.flags {
                guard case .flag(let flag) = try await store.commitAsync(.insertFlag(flag)).get() else {
                    Issue.record("no flag")
                    return
                }
                stored.append(flag)
            }
            #expect(stored.map(\.id) == stored.map(\.id).sorted() && Set(stored.map(\.id)).count == 3)
            #expect(stored.map { var flag = $0; flag.id = 0; return flag } == ModerationFixture.flags)
            let reopened = try await open(database)
            #expect(try await answer { reopened.flags(limit: 100, afterID: nil, completion: $0) } == stored)
            #expect(try await answer { reopened.flags(limit: 2, afterID: nil, completion: $0) } == Array(stored.prefix(2)))
            #expect(try await answer { reopened.flags(limit: 2, afterID: stored[0].id, completion: $0) } == Array(stored.suffix(2)))
            #expect(try await answer { reopened.flags(limit: 2, afterID: stored[2].id, completion: $0) }.isEmpty)
            #expect(try await answer { reopened.flags(limit: 0, afterID: nil, completion: $0) }.isEmpty)
        }
    }

    /// One batch: flags answer in their places with ids in enqueue order, around a message run
    /// and a channel write; and so they do when the batch runs each write on its own.
    @Test(arguments: [false, true])
    func flagsInABatchAnswerInEnqueueOrder(isolated: Bool) async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await open(database)
            try await seed(store)
            let writes: [StoreWrite?] = [
                .insertFlag(ModerationFixture.flags[0]),
                .insertMessage(Fixture.message("a", in: "c1", from: "alice")),
                .insertFlag(ModerationFixture.flags[1]),
                nil,
                .createChannel(Fixture.group("c2", ["alice"])),
                .insertFlag(ModerationFixture.flags[2]),
            ]
            let results = try await PostgresTestDatabase.transaction(url: database.url) { connection in
                var batch = PostgresBatch(connection: connection, logger: Self.logger)
                return isolated ? try await batch.applyEach(writes) : try await batch.apply(writes)
            }
            let ids = results.compactMap { result -> Int64? in
                if case .success(.flag(let flag)) = result { return flag.id }
                return nil
            }
            #expect(ids.count == 3 && ids == ids.sorted())
            for (at, flag) in zip([0, 2, 5], ModerationFixture.flags) {
                guard case .success(.flag(let stored)) = results[at] else { Issue.record("\(results[at])"); continue }
                #expect(stored.reason == flag.reason)
            }
            if case .success(.message(let message)) = results[1] { #expect(message.seq == 1) } else { Issue.record("\(results[1])") }
            #expect(try results[4].get() == .channel(lastSeq: 0))
            #expect(try await answer { store.flags(limit: 10, afterID: nil, completion: $0) }.map(\.id) == ids)
        }
    }

    /// Two nodes store flags at once: every id is distinct, each node's rise in its enqueue
    /// order, and paging reads every one exactly once.
    @Test func flagsFromTwoNodesPageCompletely() async throws {
        try await PostgresTestDatabase.with { database in
            let nodeA = try await open(database)
            try await seed(nodeA)
            let nodeB = try await open(database)
            let perNode = 25
            let stored = await withTaskGroup(of: (String, Int, Int64?).self) { group in
                for (name, node) in [("a", nodeA), ("b", nodeB)] {
                    for n in 0..<perNode {
                        group.addTask {
                            var flag = ModerationFixture.flags[0]
                            flag.reason = "\(name)-\(n)"
                            if case .success(.flag(let stored)) = await node.commitAsync(.insertFlag(flag)) { return (name, n, stored.id) }
                            return (name, n, nil)
                        }
                    }
                }
                var all: [(String, Int, Int64?)] = []
                for await result in group { all.append(result) }
                return all
            }
            #expect(stored.allSatisfy { $0.2 != nil })
            var paged: [Flag] = []
            while true {
                let page = try await answer { nodeB.flags(limit: 7, afterID: paged.last?.id, completion: $0) }
                if page.isEmpty { break }
                paged += page
            }
            #expect(paged.count == 2 * perNode)
            #expect(paged.map(\.id) == paged.map(\.id).sorted() && Set(paged.map(\.id)).count == paged.count)
            #expect(Set(paged.map(\.id)) == Set(stored.compactMap(\.2)))
        }
    }

    @Test func messagesHiddenFromEveryoneAreReadByTheirSenderOnly() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await open(database)
            try await seed(store)
            var scenario = HiddenFromEveryoneScenario()
            for write in HiddenFromEveryoneScenario.writes { scenario.record(await store.commitAsync(write)) }
            #expect(try await store.historyAsync("c1", viewer: "alice", before: 11, limit: 3).map(\.seq) == [4, 5, 10])
            #expect(try await store.historyAsync("c1", viewer: "bob", before: 11, limit: 3).map(\.seq) == [8, 9, 10])
            #expect(try await store.historyAsync("c1", viewer: "carol", before: 11, limit: 3).map(\.seq) == [1, 4, 10])
            try await scenario.checkEveryPage(
                history: { viewer, before, after, limit in
                    try await store.historyAsync("c1", viewer: viewer, before: before, after: after, limit: limit)
                },
                changes: { viewer, after, limit in try await store.changesAsync("c1", viewer: viewer, after: after, limit: limit) })
            for viewer in HiddenFromEveryoneScenario.viewers {
                for users in [Set<UserID>(), [viewer], ["alice", "bob", "carol"]] {
                    let attributions = try await answer {
                        store.attributions(channelID: "c1", seqs: 1...1, users: users, viewer: viewer, completion: $0)
                    }
                    #expect(HiddenFromEveryoneScenario.replies(attributions) == scenario.expectedReplies(users: users, viewer: viewer),
                            "\(viewer) reading \(users.sorted())")
                }
            }
        }
    }

    @Test func lastVisibleMessagesNeverHoldAMessageHiddenFromTheirViewer() async throws {
        try await PostgresTestDatabase.with { database in
            do {
                let store = try await open(database)
                for id in ["alice", "bob", "carol"] { try await store.writeAsync(.upsertUser(Fixture.user(id))) }
                for write in HiddenFromEveryoneScenario.lastVisibleWrites { try await store.writeAsync(write) }
            }
            HiddenFromEveryoneScenario.checkLastVisible(try await open(database).loadSnapshot())
        }
    }

    /// Each new message is judged against its channel as committed (§16), as on SQLite
    /// (`SendAdmissionScenario`); a batch runs through `PostgresBatch` in one transaction,
    /// its writes together or each in a savepoint of its own.
    @Test(arguments: [false, true])
    func messagesAreJudgedAgainstTheChannelAsCommitted(isolated: Bool) async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await open(database)
            for id in SendAdmissionScenario.users { try await store.writeAsync(.upsertUser(Fixture.user(id))) }
            try await store.writeAsync(.createChannel(SendAdmissionScenario.created))
            let url = database.url
            let stored = try await SendAdmissionScenario.run(
                commit: { await store.commitAsync($0) },
                batch: { writes in
                    let batchWrites: [StoreWrite?] = writes
                    return try await PostgresTestDatabase.transaction(url: url) { connection in
                        var batch = PostgresBatch(connection: connection, logger: Self.logger)
                        return isolated ? try await batch.applyEach(batchWrites) : try await batch.apply(batchWrites)
                    }
                })
            for viewer in SendAdmissionScenario.viewers {
                #expect(try await store.historyAsync(SendAdmissionScenario.channelID, viewer: viewer).map(\.id)
                        == SendAdmissionScenario.visible(stored, to: viewer), "\(viewer)")
            }
        }
    }

    /// Two nodes: whatever one node commits (a ban, a freeze, a shadow ban from the channel
    /// or app-wide) is in force for the next message the other commits, though that node
    /// was told nothing.
    @Test func aBanCommittedOnOneNodeHoldsForTheNextMessageOnAnother() async throws {
        try await PostgresTestDatabase.with { database in
            let nodeA = try await open(database)
            for id in ["alice", "bob", "carol", "dave", "erin"] { try await nodeA.writeAsync(.upsertUser(Fixture.user(id))) }
            var channel = Fixture.group("c1", ["alice", "bob", "carol", "dave", "erin"])
            try await nodeA.writeAsync(.createChannel(channel))
            let nodeB = try await open(database)
            func send(_ id: MessageID, from sender: UserID, clientMessageID: String? = nil) async throws -> StoreWriteResult {
                try await nodeB.commitAsync(.insertMessage(
                    Fixture.message(id, in: "c1", from: sender, clientMessageID: clientMessageID))).get()
            }
            guard case .message(let before) = try await send("b-1", from: "bob", clientMessageID: "b1") else {
                Issue.record("bob's first message was not stored")
                return
            }

            channel.members.removeAll { $0 == "bob" }
            channel.bans["bob"] = Ban()
            try await nodeA.writeAsync(.updateChannel(channel))
            #expect(try await send("b-2", from: "bob") == .refused(.senderNotInChannel))
            #expect(try await send("b-1-again", from: "bob", clientMessageID: "b1") == .existingMessage(before))

            channel.bans["carol"] = Ban(shadow: true)
            try await nodeA.writeAsync(.updateChannel(channel))
            guard case .message(let shadowed) = try await send("c-1", from: "carol") else {
                Issue.record("carol's message was not stored")
                return
            }
            #expect(shadowed.hiddenFrom == Message.hiddenFromEveryone)

            var dave = Fixture.user("dave")
            dave.ban = Ban(shadow: true)
            try await nodeA.writeAsync(.upsertUser(dave))
            guard case .message(let appWide) = try await send("d-1", from: "dave") else {
                Issue.record("dave's message was not stored")
                return
            }
            #expect(appWide.hiddenFrom == Message.hiddenFromEveryone)

            channel.frozen = true
            try await nodeA.writeAsync(.updateChannel(channel))
            #expect(try await send("e-1", from: "erin") == .refused(.channelFrozen))
            guard case .message(let owner) = try await send("a-1", from: "alice") else {
                Issue.record("the creator's message was not stored")
                return
            }
            #expect(owner.hiddenFrom == nil)
            #expect(try await nodeA.historyAsync("c1", viewer: "erin").map(\.id) == ["b-1", "a-1"])
            #expect(try await nodeA.historyAsync("c1", viewer: "carol").map(\.id) == ["b-1", "c-1", "a-1"])
        }
    }

    /// Senders keep sending on one node while the other bans them: once the ban's write has
    /// answered, every message enqueued after it is refused.
    @Test func aBanRacingSendsOnAnotherNodeHoldsFromItsAnswer() async throws {
        try await PostgresTestDatabase.with { database in
            let nodeA = try await open(database)
            let senders = (0..<4).map { "s\($0)" }
            for id in ["alice"] + senders { try await nodeA.writeAsync(.upsertUser(Fixture.user(id))) }
            var channel = Fixture.group("c1", ["alice"] + senders)
            try await nodeA.writeAsync(.createChannel(channel))
            let nodeB = try await open(database)
            let banned = Latch()
            let lateAnswers = try await withThrowingTaskGroup(of: [StoreWriteResult].self) { group in
                for sender in senders {
                    group.addTask {
                        var late: [StoreWriteResult] = []
                        var n = 0
                        while late.count < 5 {
                            n += 1
                            let afterBan = banned.isSet
                            let result = try await nodeB.commitAsync(.insertMessage(
                                Fixture.message("\(sender)-\(n)", in: "c1", from: sender))).get()
                            if afterBan { late.append(result) }
                        }
                        return late
                    }
                }
                try await Task.sleep(for: .milliseconds(50))
                channel.members = ["alice"]
                for sender in senders { channel.bans[sender] = Ban() }
                try await nodeA.writeAsync(.updateChannel(channel))
                banned.set()
                var all: [StoreWriteResult] = []
                for try await late in group { all += late }
                return all
            }
            #expect(lateAnswers.count == 4 * 5)
            #expect(lateAnswers.allSatisfy { $0 == .refused(.senderNotInChannel) })
        }
    }

    /// A database a schema-5 build wrote: migration 6 leaves every row as it was, with no
    /// moderation field set, and the new writes work on it.
    @Test func aSchemaFiveDatabaseMigratesWithItsRowsUnchanged() async throws {
        try await PostgresTestDatabase.with { database in
            try await PostgresTestDatabase.withClient(url: database.url) { client in
                for migration in PostgresSchema.migrations.prefix(5) {
                    for statement in migration.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
                        try await client.query(PostgresQuery(unsafeSQL: String(statement)))
                    }
                }
                try await client.query("CREATE TABLE chat_schema (version integer NOT NULL)")
                try await client.query("INSERT INTO chat_schema (version) VALUES (5)")
                for statement in ModerationFixture.schemaFiveRows { try await client.query(PostgresQuery(unsafeSQL: statement)) }
            }
            let store = try await open(database)
            #expect(PostgresSchema.migrations.count == 6)
            try await PostgresTestDatabase.withClient(url: database.url) { client in
                for try await version in try await client.query("SELECT version FROM chat_schema").decode(Int.self) {
                    #expect(version == PostgresSchema.migrations.count)
                }
            }
            ModerationFixture.checkSchemaFive(try store.loadSnapshot())
            #expect(try await store.historyAsync("dm", viewer: "bob") == ModerationFixture.schemaFiveMessages)
            #expect(try await store.historyAsync("dm", viewer: "alice") == [ModerationFixture.schemaFiveMessages[0]])
            #expect(try await answer { store.users(["bob"], completion: $0) } == [ModerationFixture.schemaFiveUsers[1]])
            #expect(try await answer { store.flags(limit: 10, afterID: nil, completion: $0) }.isEmpty)

            guard case .flag(let flag) = try await store.commitAsync(.insertFlag(ModerationFixture.flags[0])).get() else {
                Issue.record("no flag")
                return
            }
            #expect(flag.id == 1)
            var team = ModerationFixture.schemaFiveChannels[1]
            team.roles = ["alice": .moderator]
            team.bans = ["bob": Ban(shadow: true)]
            try await store.writeAsync(.updateChannel(team))
            #expect(try await open(database).loadSnapshot().channels.last == team)
        }
    }
}

/// Set once, read from any task.
private final class Latch: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
