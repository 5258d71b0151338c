import ChatCore
import Foundation
import Storage
import Testing
@testable import SQLiteStorage

/// The moderation model (§16) through the SQLite store: channel and user rows round-trip
/// exactly, flags take ascending ids and page by them, messages hidden from everyone but
/// their sender (`*`) are read by their sender only, and a schema-5 database migrates with
/// its rows as they were. `PostgresModerationTests` checks the same on PostgreSQL.
@Suite struct ModerationStorageTests {
    @Test func moderationFieldsRoundTripThroughReopen() throws {
        let directory = TemporaryDirectory()
        do {
            let store = try SQLiteStore(directory: directory.path)
            for write in ModerationFixture.writes { #expect(ModerationFixture.isWritten(try store.commit(write).get())) }
        }
        let reopened = try SQLiteStore(directory: directory.path)
        let snapshot = try reopened.loadSnapshot()
        #expect(snapshot.users == ModerationFixture.users)
        #expect(snapshot.channels == ModerationFixture.channels)
        let read = try blocking { reopened.users(["erin", "alice", "carol", "nobody"], completion: $0) }
        #expect(read.sorted { $0.id < $1.id } == ModerationFixture.users.filter { ["alice", "carol", "erin"].contains($0.id) })
    }

    /// The column formats (the bus's shapes), and lenient reads of anything else.
    @Test func moderationColumnsAreJSONAndReadLeniently() {
        let channel = ModerationFixture.moderated
        #expect(ColumnCoding.encodeRoles(channel.roles) == #"{"alice":"member","bob":"moderator","carol":"owner"}"#)
        #expect(ColumnCoding.encodeBans(["erin": Ban(shadow: true), "frank": Ban(untilMs: 9)])
                == #"{"erin":{"shadow":true,"untilMs":null},"frank":{"shadow":false,"untilMs":9}}"#)
        #expect(ColumnCoding.encodeMutes(channel.mutes) == #"{"bob":null,"carol":8000000}"#)
        #expect(ColumnCoding.encodeUserSet(["carol", "bob"]) == #"["bob","carol"]"#)
        #expect(ColumnCoding.encodeBan(nil) == nil)
        #expect(ColumnCoding.encodeBan(Ban(shadow: true, untilMs: 7)) == #"{"shadow":true,"untilMs":7}"#)
        for empty in ["", "{}", "not json", "[1]"] {
            #expect(ColumnCoding.decodeRoles(empty).isEmpty && ColumnCoding.decodeBans(empty).isEmpty)
            #expect(ColumnCoding.decodeMutes(empty).isEmpty && ColumnCoding.decodeUserSet(empty).isEmpty)
            #expect(ColumnCoding.decodeBan(empty) == (empty == "{}" ? Ban() : nil), "a ban object is a ban")
        }
        #expect(ColumnCoding.decodeBan(nil) == nil)
        #expect(ColumnCoding.decodeRoles(#"{"a":"owner","b":"admin","c":3}"#) == ["a": .owner])
        #expect(ColumnCoding.decodeBans(#"{"a":{},"b":true,"c":{"shadow":true,"untilMs":"soon"}}"#)
                == ["a": Ban(), "c": Ban(shadow: true)])
        #expect(ColumnCoding.decodeMutes(#"{"a":null,"b":"x","c":5}"#) == ["a": ChannelMute(), "c": ChannelMute(untilMs: 5)])
        #expect(ColumnCoding.decodeRoles(ColumnCoding.encodeRoles(channel.roles)) == channel.roles)
        #expect(ColumnCoding.decodeBans(ColumnCoding.encodeBans(channel.bans)) == channel.bans)
        #expect(ColumnCoding.decodeMutes(ColumnCoding.encodeMutes(channel.mutes)) == channel.mutes)
    }

    @Test func flagsTakeAscendingIdsAndPageByThem() throws {
        let directory = TemporaryDirectory()
        var stored: [Flag] = []
        do {
            let store = try Fixture.seeded(directory)
            for flag in ModerationFixture.flags {
                guard case .flag(let flag) = try store.commit(.insertFlag(flag)).get() else {
                    Issue.record("no flag")
                    return
                }
                stored.append(flag)
            }
        }
        #expect(stored.map(\.id) == stored.map(\.id).sorted() && Set(stored.map(\.id)).count == 3)
        #expect(stored.map { var flag = $0; flag.id = 0; return flag } == ModerationFixture.flags)
        let store = try SQLiteStore(directory: directory.path)
        #expect(try blocking { store.flags(limit: 100, afterID: nil, completion: $0) } == stored)
        #expect(try blocking { store.flags(limit: 2, afterID: nil, completion: $0) } == Array(stored.prefix(2)))
        #expect(try blocking { store.flags(limit: 2, afterID: stored[0].id, completion: $0) } == Array(stored.suffix(2)))
        #expect(try blocking { store.flags(limit: 2, afterID: stored[2].id, completion: $0) }.isEmpty)
        #expect(try blocking { store.flags(limit: 0, afterID: nil, completion: $0) }.isEmpty)
    }

    /// Flags in one group commit with other writes: each answers in its place, ids in enqueue order.
    @Test func flagsInABatchAnswerInEnqueueOrder() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        let gate = WriterGate()
        gate.close(store, with: .upsertUser(Fixture.user("dave")))
        let results = Collector<(Int, Result<StoreWriteResult, StoreError>)>()
        let batch: [StoreWrite] = [
            .insertFlag(ModerationFixture.flags[0]),
            .insertMessage(Fixture.message("a", in: "c1", from: "alice")),
            .insertFlag(ModerationFixture.flags[1]),
            .createChannel(Fixture.group("c2", ["alice"])),
            .insertFlag(ModerationFixture.flags[2]),
        ]
        for (index, write) in batch.enumerated() { store.enqueue(write) { results.append((index, $0)) } }
        gate.open()
        store.flush()
        let answers = results.all
        #expect(answers.map(\.0) == Array(0..<5))
        let ids = answers.compactMap { answer -> Int64? in
            if case .success(.flag(let flag)) = answer.1 { return flag.id }
            return nil
        }
        #expect(ids.count == 3 && ids == ids.sorted())
        if case .success(.message(let message)) = answers[1].1 { #expect(message.seq == 1) } else { Issue.record("\(answers[1].1)") }
        #expect(try blocking { store.flags(limit: 10, afterID: nil, completion: $0) }.map(\.id) == ids)
    }

    @Test func messagesHiddenFromEveryoneAreReadByTheirSenderOnly() async throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        var scenario = HiddenFromEveryoneScenario()
        for write in HiddenFromEveryoneScenario.writes { scenario.record(store.commit(write)) }
        // A page counts only what its viewer sees: bob's `*` messages 6…9 do not shorten alice's.
        #expect(store.seqs("c1", viewer: "alice", before: 11, limit: 3) == [4, 5, 10])
        #expect(store.seqs("c1", viewer: "bob", before: 11, limit: 3) == [8, 9, 10])
        #expect(store.seqs("c1", viewer: "carol", before: 11, limit: 3) == [1, 4, 10])
        try await scenario.checkEveryPage(
            history: { viewer, before, after, limit in try store.history("c1", viewer: viewer, before: before, after: after, limit: limit).get() },
            changes: { viewer, after, limit in try store.changes("c1", viewer: viewer, after: after, limit: limit) })
        for viewer in HiddenFromEveryoneScenario.viewers {
            for users in [Set<UserID>(), [viewer], ["alice", "bob", "carol"]] {
                let attributions = try blocking {
                    store.attributions(channelID: "c1", seqs: 1...1, users: users, viewer: viewer, completion: $0)
                }
                #expect(HiddenFromEveryoneScenario.replies(attributions) == scenario.expectedReplies(users: users, viewer: viewer),
                        "\(viewer) reading \(users.sorted())")
            }
        }
    }

    @Test func lastVisibleMessagesNeverHoldAMessageHiddenFromTheirViewer() throws {
        let directory = TemporaryDirectory()
        do {
            let store = try SQLiteStore(directory: directory.path)
            for id in ["alice", "bob", "carol"] { try store.write(.upsertUser(Fixture.user(id))) }
            for write in HiddenFromEveryoneScenario.lastVisibleWrites { try store.write(write) }
        }
        HiddenFromEveryoneScenario.checkLastVisible(try SQLiteStore(directory: directory.path).loadSnapshot())
    }

    /// Each new message is judged against its channel as committed (§16): non-members and
    /// plain members of a frozen channel are refused, shadow-banned senders stored as `*`,
    /// retries of messages stored before answered with them; writes earlier in the same
    /// batch count, and a write that failed does not.
    @Test func messagesAreJudgedAgainstTheChannelAsCommitted() async throws {
        let directory = TemporaryDirectory()
        do {
            let store = try SQLiteStore(directory: directory.path)
            for id in SendAdmissionScenario.users { try store.write(.upsertUser(Fixture.user(id))) }
            try store.write(.createChannel(SendAdmissionScenario.created))
            let stored = try await SendAdmissionScenario.run(
                commit: { store.commit($0) },
                batch: { writes in
                    let gate = WriterGate()
                    gate.close(store, with: .upsertUser(Fixture.user("zed")))
                    let results = Collector<(Int, Result<StoreWriteResult, StoreError>)>()
                    for (index, write) in writes.enumerated() { store.enqueue(write) { results.append((index, $0)) } }
                    gate.open()
                    store.flush()
                    return results.all.sorted { $0.0 < $1.0 }.map(\.1)
                })
            for viewer in SendAdmissionScenario.viewers {
                #expect(try store.history(SendAdmissionScenario.channelID, viewer: viewer, limit: 1_000).get().map(\.id)
                        == SendAdmissionScenario.visible(stored, to: viewer), "\(viewer)")
            }
        }
        // The same answers from a store that reads every channel and user afresh.
        let reopened = try SQLiteStore(directory: directory.path)
        #expect(try reopened.commit(SendAdmissionScenario.send("d-3", from: "dave")).get() == .refused(.senderNotInChannel))
        guard case .success(.message(let message)) = reopened.commit(SendAdmissionScenario.send("g-3", from: "gina")) else {
            Issue.record("gina's message was not stored")
            return
        }
        #expect(message.hiddenFrom == Message.hiddenFromEveryone)
    }

    /// A database a schema-5 build wrote: migration 6 leaves every row as it was, with no
    /// moderation field set, and the new writes work on it.
    @Test func aSchemaFiveDatabaseMigratesWithItsRowsUnchanged() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let path = (directory.path as NSString).appendingPathComponent("chat.sqlite")
        do {
            let connection = try SQLiteConnection(path: path)
            for migration in Migrations.all.prefix(5) { try connection.execute(migration) }
            try connection.execute("PRAGMA user_version = 5")
            for statement in ModerationFixture.schemaFiveRows { try connection.execute(statement) }
        }
        let store = try SQLiteStore(directory: directory.path)
        let connection = try SQLiteConnection(path: store.databasePath)
        #expect(Migrations.latestVersion == 6)
        #expect(try connection.integerPragma("user_version") == Migrations.latestVersion)
        ModerationFixture.checkSchemaFive(try store.loadSnapshot())
        #expect(try store.history("dm", viewer: "bob", limit: 10).get() == ModerationFixture.schemaFiveMessages)
        #expect(try store.history("dm", viewer: "alice", limit: 10).get() == [ModerationFixture.schemaFiveMessages[0]])
        #expect(try blocking { store.users(["bob"], completion: $0) } == [ModerationFixture.schemaFiveUsers[1]])
        #expect(try blocking { store.flags(limit: 10, afterID: nil, completion: $0) }.isEmpty)

        guard case .flag(let flag) = try store.commit(.insertFlag(ModerationFixture.flags[0])).get() else {
            Issue.record("no flag")
            return
        }
        #expect(flag.id == 1)
        var team = ModerationFixture.schemaFiveChannels[1]
        team.roles = ["alice": .moderator]
        team.bans = ["bob": Ban(shadow: true)]
        try store.write(.updateChannel(team))
        #expect(try SQLiteStore(directory: directory.path).loadSnapshot().channels.last == team)
    }
}
