import ChatCore
import Logging
import PostgresNIO
import Testing
@testable import PostgresStorage
import ServiceTestSupport
import Storage
import Synchronization

/// `PostgresStore` against a real PostgreSQL (a fresh database per test): the same
/// answers as the SQLite store, plus what only a shared database has to hold —
/// two nodes never hand out one `seq`, and a `clientMessageId` is stored once
/// whichever node it comes through.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "CHAT_TEST_POSTGRES_URL is not set"), .serialized)
struct PostgresStoreTests {
    private static let logger = Logger(label: "postgres-store-tests")

    private func withDatabase(_ body: (PostgresTestDatabase) async throws -> Void) async throws {
        try await PostgresTestDatabase.with(body)
    }

    private func open(_ database: PostgresTestDatabase) async throws -> PostgresStore {
        try await PostgresStore.open(url: database.url, logger: Self.logger)
    }

    private func seed(_ store: PostgresStore) async throws {
        for id in ["alice", "bob", "carol"] { try await store.writeAsync(.upsertUser(Fixture.user(id))) }
        try await store.writeAsync(.createChannel(Fixture.group("c1", ["alice", "bob", "carol"])))
    }

    @Test func everyWriteRoundTripsThroughReopen() async throws {
        try await withDatabase { database in
            var alice = User(id: "alice", name: "Alice", metadata: ["quote": "\"hi\" / ünïcödé"], createdAt: 10)
            do {
                let store = try await open(database)
                try await store.writeAsync(.upsertUser(alice))
                for id in ["bob", "carol"] { try await store.writeAsync(.upsertUser(Fixture.user(id))) }
                alice.name = "Alice A."
                alice.lastSeenAt = 99
                try await store.writeAsync(.upsertUser(alice))
                var dm = Fixture.group("dm", ["alice", "bob"], oneToOne: true)
                try await store.writeAsync(.createChannel(dm))
                try await store.writeAsync(.createChannel(Fixture.group("team", ["carol", "alice"])))
                try await store.writeAsync(.setUserDeactivated("carol", true))

                let first = try await store.commitAsync(.insertMessage(Message(
                    id: "m1", channelID: "dm", senderID: "alice", text: "hello", dataJSON: #"{"k":[1,2]}"#,
                    clientMessageID: "c-1", createdAt: 40))).get()
                guard case .message(let m1) = first else { Issue.record("no message"); return }
                #expect(m1.seq == 1)
                let second = try await store.commitAsync(.insertMessage(Fixture.message("m2", in: "dm", from: "alice",
                                                                                        hiddenFrom: "bob"))).get()
                guard case .message(let m2) = second else { Issue.record("no message"); return }
                #expect(m2.seq == 2)
                #expect(try await store.historyAsync("dm", viewer: "alice").map(\.id) == ["m1", "m2"])
                #expect(try await store.historyAsync("dm", viewer: "bob").map(\.id) == ["m1"])
                #expect(try await store.historyAsync("dm", viewer: "alice", before: 2).map(\.seq) == [1])
                #expect(try await store.historyAsync("dm", viewer: "alice", after: 1).map(\.seq) == [2])
                #expect(try await store.lookupAsync(sender: "alice", clientMessageID: "c-1") == m1)
                try await store.writeAsync(.setBlock(blocker: "bob", blocked: "alice", isBlocked: true, at: 50))
                dm.members = ["bob", "alice"]
                dm.name = "renamed"
                try await store.writeAsync(.updateChannel(dm))
            }
            let reopened = try await open(database)
            let snapshot = try reopened.loadSnapshot()
            #expect(snapshot.users.map(\.id) == ["alice", "bob", "carol"])
            #expect(snapshot.users.first == alice)
            #expect(snapshot.users.last?.deactivated == true)
            #expect(snapshot.channels.map(\.id) == ["dm", "team"])
            #expect(snapshot.channels.first?.members == ["bob", "alice"])
            #expect(snapshot.channels.first?.name == "renamed")
            #expect(snapshot.lastMessages.map(\.id) == ["m2"])
            #expect(snapshot.lastVisibleMessages.map(\.viewer) == ["bob"])
            #expect(snapshot.lastVisibleMessages.map(\.message.id) == ["m1"])
            #expect(snapshot.blocks.map(\.blocker) == ["bob"])
        }
    }

    /// One batch: a repeated `clientMessageId` answers with the first, a message to an
    /// unknown channel and a taken channel id are refused alone, the rest commits gapless.
    @Test func aBatchRefusesOnlyItsBadWrites() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            let writes: [StoreWrite?] = [
                .insertMessage(Fixture.message("a", in: "c1", from: "alice", clientMessageID: "k")),
                .insertMessage(Fixture.message("b", in: "nowhere", from: "alice")),
                .insertMessage(Fixture.message("a-again", in: "c1", from: "alice", clientMessageID: "k")),
                .createChannel(Fixture.group("c1", ["bob"])),
                .insertMessage(Fixture.message("c", in: "c1", from: "bob")),
            ]
            let results = try await PostgresTestDatabase.transaction(url: database.url) { connection in
                var batch = PostgresBatch(connection: connection, logger: Self.logger)
                return try await batch.apply(writes)
            }
            guard case .success(.message(let a)) = results[0], case .success(.existingMessage(let again)) = results[2],
                  case .success(.message(let c)) = results[4] else {
                Issue.record("unexpected results \(results)")
                return
            }
            #expect(a.seq == 1 && again == a && c.seq == 2)
            if case .success = results[1] { Issue.record("a message to an unknown channel was stored") }
            if case .success = results[3] { Issue.record("a taken channel id was created again") }
            #expect(try await store.historyAsync("c1").map(\.id) == ["a", "c"])
        }
    }

    /// A value the server will not store (U+0000 in text: the request decoder refuses it, this
    /// is the store's own guard) fails its own write only: the batch it shared with 39 honest
    /// writes in four channels is retried with each write on its own.
    @Test func aWriteTheServerRefusesFailsAloneNotItsBatch() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            for channel in 2...4 { try await store.writeAsync(.createChannel(Fixture.group("c\(channel)", ["alice", "bob"]))) }
            let answers = Mutex([Int: Bool]())
            for n in 0..<40 {
                var message = Fixture.message("m\(n)", in: "c\(n % 4 + 1)", from: "alice")
                if n == 17 { message.text = "a\u{0}b" }
                store.enqueue(.insertMessage(message)) { result in
                    answers.withLock { $0[n] = (try? result.get()) != nil }
                }
            }
            let started = ContinuousClock.now
            while answers.withLock({ $0.count }) < 40, ContinuousClock.now - started < .seconds(30) {
                try await Task.sleep(for: .milliseconds(20))
            }
            let stored = answers.withLock { $0 }
            #expect(stored.count == 40)
            #expect(stored.filter { !$0.value }.map(\.key) == [17], "only the bad write fails")
            for channel in 1...4 {
                let seqs = try await store.historyAsync("c\(channel)", limit: 100).map(\.seq)
                #expect(seqs == (0..<seqs.count).map { Int64($0 + 1) }, "c\(channel): \(seqs)")
                #expect(seqs.count == (channel == 2 ? 9 : 10), "c\(channel): \(seqs.count) stored")
            }
        }
    }

    /// Two nodes on one database, writing into the same channels at once.
    @Test func twoNodesNeverShareASeq() async throws {
        try await withDatabase { database in
            let nodeA = try await open(database)
            try await seed(nodeA)
            for channel in 2...4 { try await nodeA.writeAsync(.createChannel(Fixture.group("c\(channel)", ["alice", "bob"]))) }
            let nodeB = try await open(database)
            let perNode = 400
            let results = await withTaskGroup(of: Result<StoreWriteResult, StoreError>.self) { group in
                for (name, node) in [("a", nodeA), ("b", nodeB)] {
                    for n in 0..<perNode {
                        group.addTask {
                            await node.commitAsync(.insertMessage(Fixture.message(
                                "\(name)-\(n)", in: "c\(n % 4 + 1)", from: "alice", clientMessageID: "\(name)-\(n)")))
                        }
                    }
                }
                var all: [Result<StoreWriteResult, StoreError>] = []
                for await result in group { all.append(result) }
                return all
            }
            #expect(results.allSatisfy { if case .success(.message) = $0 { true } else { false } })
            var total = 0
            for channel in 1...4 {
                let seqs = try await nodeA.historyAsync("c\(channel)", limit: 10_000).map(\.seq)
                #expect(seqs == (0..<seqs.count).map { Int64($0) + 1 })
                total += seqs.count
            }
            #expect(total == 2 * perNode)
        }
    }

    /// Closed-loop senders keep two batches in flight (the next one starts while the one
    /// before commits), with a block write now and then that makes a batch wait instead:
    /// completions still come in enqueue order, and in each channel the `seq`s follow
    /// that order, gapless.
    @Test func completionsAndSeqsFollowEnqueueOrderWithTwoBatchesInFlight() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            for channel in 2...4 { try await store.writeAsync(.createChannel(Fixture.group("c\(channel)", ["alice", "bob"]))) }
            struct Answer { var number: Int; var channel: ChannelID; var seq: Int64? }
            let state = Mutex((enqueued: 0, answers: [Answer]()))
            let senders = 40, perSender = 30
            @Sendable func send(_ sender: Int, _ n: Int) {
                guard n < perSender else { return }
                let channel = "c\((sender + n) % 4 + 1)"
                state.withLock { counts in
                    let number = counts.enqueued
                    counts.enqueued += 1
                    if number % 50 == 25 {
                        store.enqueue(.setBlock(blocker: "carol", blocked: "bob", isBlocked: number % 100 == 25, at: 9)) { _ in }
                    }
                    store.enqueue(.insertMessage(Fixture.message("s\(sender)-\(n)", in: channel, from: "alice",
                                                                 clientMessageID: "s\(sender)-\(n)"))) { result in
                        var seq: Int64?
                        if case .success(.message(let stored)) = result { seq = stored.seq }
                        state.withLock { $0.answers.append(Answer(number: number, channel: channel, seq: seq)) }
                        send(sender, n + 1)
                    }
                }
            }
            for sender in 0..<senders { send(sender, 0) }
            let started = ContinuousClock.now
            while state.withLock({ $0.answers.count }) < senders * perSender, ContinuousClock.now - started < .seconds(60) {
                try await Task.sleep(for: .milliseconds(20))
            }
            let answers = state.withLock { $0.answers }
            #expect(answers.count == senders * perSender)
            #expect(answers.map(\.number) == answers.map(\.number).sorted(), "completions out of enqueue order")
            #expect(answers.allSatisfy { $0.seq != nil }, "a message was not stored")
            for channel in 1...4 {
                let seqs = answers.filter { $0.channel == "c\(channel)" }.compactMap(\.seq)
                #expect(seqs == (0..<seqs.count).map { Int64($0) + 1 }, "c\(channel): seqs out of enqueue order")
                #expect(try await store.historyAsync("c\(channel)", limit: 10_000).map(\.seq) == seqs)
            }
        }
    }

    /// The first of two overlapping batches is refused by the server (a trigger raises once,
    /// after a pause that lets the next batch start and wait on its channel rows): the next
    /// batch must not commit ahead of the first's retry. Every message is stored, seqs follow
    /// enqueue order per channel, completions come in enqueue order. The channel rows are
    /// held by another transaction until both batches are queued, so the second is pending
    /// when the first gets its rows and starts beside it.
    @Test func theBatchBehindARefusedOneWaitsForItsRetry() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            try await store.writeAsync(.createChannel(Fixture.group("c2", ["alice", "bob"])))
            try await PostgresTestDatabase.withClient(url: database.url) { client in
                for statement in [
                    "CREATE SEQUENCE refusals",
                    """
                    CREATE FUNCTION refuse_once() RETURNS trigger AS $$
                    BEGIN
                        IF NEW.text = 'refuse me once' AND nextval('refusals') = 1 THEN
                            PERFORM pg_sleep(0.3);
                            RAISE EXCEPTION 'refused once for the test' USING ERRCODE = '40001';
                        END IF;
                        RETURN NEW;
                    END $$ LANGUAGE plpgsql
                    """,
                    "CREATE TRIGGER refuse_once BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_once()",
                ] {
                    try await client.query(PostgresQuery(unsafeSQL: statement), logger: Self.logger)
                }
            }
            struct Answer { var number: Int; var channel: ChannelID; var seq: Int64? }
            let answers = Mutex([Answer]())
            let enqueued = Mutex(0)
            @Sendable func enqueue(_ text: String, in channel: ChannelID) {
                enqueued.withLock { number in
                    let mine = number
                    number += 1
                    store.enqueue(.insertMessage(Fixture.message("m\(mine)", in: channel, from: "alice", text: text))) { result in
                        var seq: Int64?
                        if case .success(.message(let stored)) = result { seq = stored.seq }
                        answers.withLock { $0.append(Answer(number: mine, channel: channel, seq: seq)) }
                    }
                }
            }
            let queued = Mutex(false)
            try await PostgresTestDatabase.withClient(url: database.url) { client in
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: Self.logger)
                    try await connection.query("SELECT 1 FROM channels WHERE id IN ('c1', 'c2') FOR UPDATE", logger: Self.logger)
                    // The first batch: the refused message and others in c1 and c2; it waits for the rows.
                    enqueue("refuse me once", in: "c1")
                    for n in 0..<5 { enqueue("first \(n)", in: n % 2 == 0 ? "c1" : "c2") }
                    try await Task.sleep(for: .milliseconds(150))
                    // The next batch, pending when the first gets the rows.
                    for n in 0..<10 { enqueue("next \(n)", in: n % 2 == 0 ? "c1" : "c2") }
                    try await Task.sleep(for: .milliseconds(50))
                    try await connection.query("COMMIT", logger: Self.logger)
                    queued.withLock { $0 = true }
                }
            }
            #expect(queued.withLock { $0 })
            let started = ContinuousClock.now
            while answers.withLock({ $0.count }) < 16, ContinuousClock.now - started < .seconds(20) {
                try await Task.sleep(for: .milliseconds(20))
            }
            let all = answers.withLock { $0 }
            #expect(all.count == 16)
            #expect(all.map(\.number) == Array(0..<16), "completions out of enqueue order")
            #expect(all.allSatisfy { $0.seq != nil }, "a message was not stored: \(all.map(\.seq))")
            for channel in ["c1", "c2"] {
                let seqs = all.filter { $0.channel == channel }.compactMap(\.seq)
                #expect(seqs == (0..<seqs.count).map { Int64($0) + 1 }, "\(channel): seqs out of enqueue order: \(seqs)")
                #expect(try await store.historyAsync(channel, limit: 100).map(\.seq) == seqs)
            }
            try await PostgresTestDatabase.withClient(url: database.url) { client in
                let rows = try await client.query("SELECT last_value FROM refusals", logger: Self.logger)
                for try await value in rows.decode(Int64.self) { #expect(value >= 2, "the trigger refused once, then let the retry in") }
            }
        }
    }

    /// A retry through another node returns the message the first node stored.
    @Test func aClientMessageIdIsStoredOnceAcrossNodes() async throws {
        try await withDatabase { database in
            let nodeA = try await open(database)
            try await seed(nodeA)
            let nodeB = try await open(database)
            let first = try await nodeA.commitAsync(.insertMessage(
                Fixture.message("m-a", in: "c1", from: "bob", clientMessageID: "retry-me"))).get()
            let retry = try await nodeB.commitAsync(.insertMessage(
                Fixture.message("m-b", in: "c1", from: "bob", clientMessageID: "retry-me"))).get()
            guard case .message(let original) = first else { Issue.record("not stored: \(first)"); return }
            #expect(retry == .existingMessage(original))
            let next = try await nodeB.commitAsync(.insertMessage(Fixture.message("m-c", in: "c1", from: "bob"))).get()
            guard case .message(let stored) = next else { Issue.record("no message"); return }
            #expect(stored.seq == 2)
            #expect(try await nodeA.historyAsync("c1").map(\.id) == ["m-a", "m-c"])
        }
    }

    @Test func refusedWritesChangeNothing() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            if case .success = await store.commitAsync(.setUserDeactivated("nobody", true)) {
                Issue.record("deactivated an unknown user")
            }
            if case .success = await store.commitAsync(.updateChannel(Fixture.group("nowhere", ["alice"]))) {
                Issue.record("updated an unknown channel")
            }
            #expect(try await store.commitAsync(.setUserDeactivated("bob", true)).get() == .done)
        }
    }

    /// The server drops every connection of the store: writes fail or succeed, never
    /// with a false `ok`, and the store serves again without being reopened.
    @Test func resumesAfterItsConnectionsAreKilled() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            let name = database.name
            try await PostgresTestDatabase.admin { client in
                try await client.query(PostgresQuery(unsafeSQL: """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = '\(name)' AND pid <> pg_backend_pid()
                    """))
            }
            var acknowledged: [MessageID] = []
            var failures: [String] = []
            for n in 0..<20 {
                switch await store.commitAsync(.insertMessage(Fixture.message("after-\(n)", in: "c1", from: "carol"))) {
                case .success(.message(let stored)): acknowledged.append(stored.id)
                case .success(let other): failures.append("\(other)")
                case .failure(let error): failures.append("\(error)")
                }
            }
            #expect(acknowledged.count >= 18, "\(failures)")
            let stored = try await store.historyAsync("c1").map(\.id)
            #expect(Set(acknowledged).isSubset(of: Set(stored)))
            #expect(try await store.historyAsync("c1").map(\.seq) == (0..<stored.count).map { Int64($0) + 1 })
        }
    }

    /// Reads that wait (here on a lock a migration could hold) take only the read
    /// connections: a write still gets one of its own and commits at once, instead of
    /// waiting for the pool past its connection deadline.
    @Test func writesDoNotWaitBehindReads() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            try await PostgresTestDatabase.withClient(url: database.url) { locker in
                let holding = Task {
                    try await locker.withConnection { connection in
                        try await connection.query("BEGIN", logger: Self.logger)
                        try await connection.query("LOCK TABLE read_marks IN ACCESS EXCLUSIVE MODE", logger: Self.logger)
                        try await connection.query("SELECT pg_sleep(4)", logger: Self.logger)
                        try await connection.query("COMMIT", logger: Self.logger)
                    }
                }
                try await Task.sleep(for: .milliseconds(300))
                // More reads than the pool has connections, each stuck behind the lock.
                let reads = Mutex(0)
                for _ in 0..<12 {
                    store.streams(of: ["c1"]) { _ in reads.withLock { $0 += 1 } }
                }
                try await Task.sleep(for: .milliseconds(300))
                let started = ContinuousClock.now
                let written = await store.commitAsync(.upsertUser(Fixture.user("dave")))
                let took = ContinuousClock.now - started
                #expect(reads.withLock { $0 } == 0, "the reads were not held: the test shows nothing")
                if case .failure(let error) = written { Issue.record("the write failed behind the reads: \(error)") }
                #expect(took < .seconds(1.5), "the write waited \(took) behind the reads")
                _ = try await holding.value
            }
        }
    }

    /// Connections killed while batches are on them, again and again: every write is
    /// answered, and soon (postgres-nio never answers a query sent on a connection the
    /// server is closing; the writer must not wait on it), and what was acknowledged is
    /// stored, gapless.
    @Test func everyWriteIsAnsweredWhileConnectionsAreKilledUnderIt() async throws {
        try await withDatabase { database in
            let store = try await open(database)
            try await seed(store)
            let answers = Mutex<[Result<StoreWriteResult, StoreError>]>([])
            let count = 400
            let name = database.name
            let started = ContinuousClock.now
            for n in 0..<count {
                store.enqueue(.insertMessage(Fixture.message("k-\(n)", in: "c1", from: "carol"))) { result in
                    answers.withLock { $0.append(result) }
                }
                if n % 40 == 20 {
                    try await PostgresTestDatabase.admin { client in
                        try await client.query(PostgresQuery(unsafeSQL: """
                            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                            WHERE datname = '\(name)' AND pid <> pg_backend_pid()
                            """))
                    }
                }
            }
            // A bounded wait: a writer stuck on a dead connection fails here instead of hanging the run.
            while answers.withLock({ $0.count }) < count, ContinuousClock.now - started < .seconds(8) {
                try await Task.sleep(for: .milliseconds(20))
            }
            let results = answers.withLock { $0 }
            #expect(results.count == count, "\(count - results.count) writes never answered")
            let acknowledged = results.compactMap { result -> MessageID? in
                if case .success(.message(let stored)) = result { return stored.id }
                return nil
            }
            #expect(acknowledged.count > 0)
            let stored = try await store.historyAsync("c1", limit: 1_000)
            #expect(Set(acknowledged).isSubset(of: Set(stored.map(\.id))))
            #expect(stored.map(\.seq) == (0..<stored.count).map { Int64($0) + 1 })
        }
    }

    /// DESIGN "stored decisions read the database": a 1-to-1 message is stored hidden from a
    /// recipient who blocked the sender even when the storing node's memory has not heard of
    /// the block yet (another node committed it); in strict mode also the other way round.
    @Test(arguments: [false, true])
    func aOneToOneMessageIsHiddenByTheBlockRowsInItsTransaction(strict: Bool) async throws {
        try await withDatabase { database in
            let store = try await PostgresStore.open(url: database.url, logger: Self.logger, strictBlocking: strict)
            try await seed(store)
            try await store.writeAsync(.createChannel(Fixture.group("dm", ["alice", "bob"], oneToOne: true)))
            try await store.writeAsync(.setBlock(blocker: "bob", blocked: "alice", isBlocked: true, at: 5))
            // The messages come in as a node that missed the block would write them: not hidden.
            let fromAlice = try await store.commitAsync(.insertMessage(Fixture.message("m1", in: "dm", from: "alice"))).get()
            let fromBob = try await store.commitAsync(.insertMessage(Fixture.message("m2", in: "dm", from: "bob"))).get()
            let inGroup = try await store.commitAsync(.insertMessage(Fixture.message("m3", in: "c1", from: "alice"))).get()
            guard case .message(let m1) = fromAlice, case .message(let m2) = fromBob, case .message(let m3) = inGroup else {
                Issue.record("not stored")
                return
            }
            #expect(m1.hiddenFrom == "bob", "bob blocked alice: her 1-to-1 message is hidden from him")
            #expect(m2.hiddenFrom == (strict ? "alice" : nil), "strict mode hides bob's message from the user he blocked")
            #expect(m3.hiddenFrom == nil, "group messages are never stored hidden")
            #expect(try await store.historyAsync("dm", viewer: "bob").map(\.id) == ["m2"])
            #expect(try await store.historyAsync("dm", viewer: "alice").map(\.id) == (strict ? ["m1"] : ["m1", "m2"]))
        }
    }
}
