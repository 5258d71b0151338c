import ChatCore
import Dispatch
import Foundation
import Storage
import Synchronization
import Testing
@testable import SQLiteStorage

/// `changes` (§15 `message.changes`) reads the messages created since a version (a run of
/// seqs) and those changed since (the partial index on version) and merges them: these
/// tests compare every page, after every version, with what the writes answered.
@Suite struct ChangeLogTests {
    @Test(arguments: 1...12)
    func everyPageAfterEveryVersionMatchesTheWrites(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        var script = ChangeLogScript(seed: seed)
        for _ in 0..<120 { script.record(store.commit(script.nextWrite())) }
        try script.checkEveryPage(limits: [1, 2, 3, 10, 100]) { after, limit, viewer in
            try store.changes("c1", viewer: viewer, after: after, limit: limit)
        }
        // Every magnitude a client may send (the decoder refuses only negatives): nothing after.
        for after in [Int64.max, Int64.max - 1, Int64(Int32.max) + 1] {
            #expect(try store.changes("c1", viewer: "alice", after: after, limit: 100).isEmpty)
            #expect(try store.changes("nope", viewer: "alice", after: after, limit: 100).isEmpty)
        }
    }

    /// A database written before `created_version` existed: the migration gives every row a
    /// creation version it can be found by, and the pages are as before.
    @Test(arguments: 1...6)
    func rowsFromBeforeMigrationFiveReadAsBefore(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let path = (directory.path as NSString).appendingPathComponent("chat.sqlite")
        let legacy = LegacyChangeLog(seed: seed)
        do {
            let connection = try SQLiteConnection(path: path)
            for migration in Migrations.all.prefix(4) { try connection.execute(migration) }
            try connection.execute("PRAGMA user_version = 4")
            for statement in legacy.statements { try connection.execute(statement) }
        }
        let store = try SQLiteStore(directory: directory.path)
        let connection = try SQLiteConnection(path: store.databasePath)
        #expect(try connection.integerPragma("user_version") == Migrations.latestVersion)
        try legacy.model.checkEveryPage(limits: [1, 2, 7, 100]) { after, limit, viewer in
            try store.changes("c1", viewer: viewer, after: after, limit: limit)
        }
    }

    /// A new message writes no entry in the version index: only changed messages are in it.
    @Test func onlyChangedMessagesAreIndexedByVersion() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        for index in 1...5 { _ = try #require(store.store(Fixture.message("m\(index)", in: "c1", from: "alice"))) }
        try store.write(.changeMessage(MessageChange(channelID: "c1", seq: 2, actor: "bob", at: 1, action: .addReaction("+1"))))
        let connection = try SQLiteConnection(path: store.databasePath)
        let statement = try connection.statement("""
            SELECT seq FROM messages INDEXED BY messages_changed_by_version
            WHERE channel_id = 'c1' AND version <> created_version AND version > 0
            """)
        let indexed = try statement.withReset { row throws(StoreError) in
            var seqs: [Int64] = []
            while try row.step() { seqs.append(row.int64(0)) }
            return seqs
        }
        #expect(indexed == [2])
    }
}

/// What a schema-4 store wrote for `c1` (as SQL both backends run): new messages and
/// replies take the next version (a reply's parent too); a change moves one message to the
/// next version, often the newest message, which no later row shows was changed.
struct LegacyChangeLog {
    private(set) var statements: [String] = [
        "INSERT INTO channels (id, type, name, created_at, created_by) VALUES ('c1', 'group', 'c1', 1, 'alice')",
    ]
    private(set) var model = ChangeLogModel()

    init(seed: UInt64, steps: Int = 150) {
        var random = SplitMix(seed: seed)
        var seq: Int64 = 0, version: Int64 = 0
        for step in 0..<steps {
            let roll = random.next() % 100
            version += 1
            if seq == 0 || roll < 45 {
                seq += 1
                let hidden = roll % 7 == 0 ? "'bob'" : "NULL"
                statements.append("""
                    INSERT INTO messages (channel_id, seq, id, sender_id, text, created_at, hidden_from, version)
                    VALUES ('c1', \(seq), 'm\(step)', 'alice', 't', 1, \(hidden), \(version))
                    """)
                model.set(seq: seq, version: version, hiddenFrom: hidden == "NULL" ? nil : "bob")
            } else if roll < 60 {
                let parent = Int64(random.next() % UInt64(seq)) + 1
                seq += 1
                statements.append("""
                    INSERT INTO messages (channel_id, seq, id, sender_id, text, created_at, version, parent_seq)
                    VALUES ('c1', \(seq), 'm\(step)', 'bob', 't', 1, \(version), \(parent))
                    """)
                statements.append("UPDATE messages SET version = \(version) WHERE channel_id = 'c1' AND seq = \(parent)")
                model.set(seq: seq, version: version)
                model.set(seq: parent, version: version)
            } else {
                let target = roll % 3 == 0 ? seq : Int64(random.next() % UInt64(seq)) + 1
                statements.append("UPDATE messages SET version = \(version) WHERE channel_id = 'c1' AND seq = \(target)")
                model.set(seq: target, version: version)
            }
            statements.append("UPDATE channels SET last_seq = \(seq), version = \(version) WHERE id = 'c1'")
        }
    }
}

/// A deterministic generator (SplitMix64) so a failing seed reproduces.
struct SplitMix: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The version and visibility of every message of one channel, and the pages `changes`
/// must answer from them: the messages with a later version than asked, hidden ones left
/// out for their viewer, by version then seq.
struct ChangeLogModel {
    private(set) var versions: [Int64: Int64] = [:]
    private(set) var hiddenFrom: [Int64: UserID] = [:]

    var channelVersion: Int64 { versions.values.max() ?? 0 }

    mutating func set(seq: Int64, version: Int64, hiddenFrom hidden: UserID?? = .none) {
        versions[seq] = version
        if case .some(let hidden) = hidden { hiddenFrom[seq] = hidden }
    }

    func expected(after: Int64, limit: Int, viewer: UserID) -> [Int64] {
        versions.filter { $0.value > after && hiddenFrom[$0.key] != viewer }
            .sorted { ($0.value, $0.key) < ($1.value, $1.key) }
            .prefix(limit).map(\.key)
    }

    /// Reads every page after every version (and one past the last) for a viewer a message
    /// is hidden from and one it is not, and compares seqs and versions.
    func checkEveryPage(limits: [Int], read: (Int64, Int, UserID) throws -> [Message]) throws {
        for after in -1...(channelVersion + 1) {
            for limit in limits {
                for viewer in ["alice", "bob"] {
                    let page = try read(after, limit, viewer)
                    let expected = expected(after: after, limit: limit, viewer: viewer)
                    #expect(page.map(\.seq) == expected, "after \(after), limit \(limit), viewer \(viewer)")
                    #expect(page.map(\.version) == expected.map { versions[$0] ?? -1 })
                }
            }
        }
    }

    /// As `checkEveryPage`, for a store read asynchronously.
    func checkEveryPage(limits: [Int], read: (Int64, Int, UserID) async throws -> [Message]) async throws {
        for after in -1...(channelVersion + 1) {
            for limit in limits {
                for viewer in ["alice", "bob"] {
                    let page = try await read(after, limit, viewer)
                    let expected = expected(after: after, limit: limit, viewer: viewer)
                    #expect(page.map(\.seq) == expected, "after \(after), limit \(limit), viewer \(viewer)")
                    #expect(page.map(\.version) == expected.map { versions[$0] ?? -1 })
                }
            }
        }
    }
}

/// A random run of sends (some hidden from bob), replies, reactions, edits and deletes in
/// `c1`, and the model of what each committed write answered.
struct ChangeLogScript {
    private var random: SplitMix
    private var step = 0
    private var topLevel: [Int64] = []
    private(set) var model = ChangeLogModel()

    init(seed: UInt64) { random = SplitMix(seed: seed) }

    mutating func nextWrite() -> StoreWrite {
        step += 1
        let roll = random.next() % 100
        let users = ["alice", "bob", "carol"]
        let user = users[Int(random.next() % 3)]
        let count = Int64(model.versions.count)
        if count == 0 || roll < 35 {
            let hidden: UserID? = roll % 9 == 0 ? "bob" : nil
            return .insertMessage(Fixture.message("m\(step)", in: "c1", from: user, hiddenFrom: hidden))
        }
        let seq = Int64(random.next() % UInt64(count)) + 1
        if roll < 50, let parent = topLevel.randomElement(using: &random) {
            var reply = Fixture.message("m\(step)", in: "c1", from: user)
            reply.parentSeq = parent
            return .insertMessage(reply)
        }
        let kind = ["+1", "heart"][Int(random.next() % 2)]
        let action: MessageChange.Action = switch roll {
        case ..<75: .addReaction(kind)
        case ..<85: .removeReaction(kind)
        case ..<95: .edit(text: "edit \(step)", dataJSON: nil, mentionedUserIDs: [], hideFrom: nil)
        default: .delete
        }
        return .changeMessage(MessageChange(channelID: "c1", seq: seq, actor: user, at: Int64(step), action: action))
    }

    mutating func record(_ result: Result<StoreWriteResult, StoreError>) {
        switch result {
        case .success(.message(let message)):
            model.set(seq: message.seq, version: message.version, hiddenFrom: .some(message.hiddenFrom))
            if let parent = message.parentSeq {
                model.set(seq: parent, version: message.version)
            } else {
                topLevel.append(message.seq)
            }
        case .success(.changed(let message, _)):
            model.set(seq: message.seq, version: message.version, hiddenFrom: .some(message.hiddenFrom))
        default:
            break
        }
    }

    func checkEveryPage(limits: [Int], read: (Int64, Int, UserID) throws -> [Message]) throws {
        try model.checkEveryPage(limits: limits, read: read)
    }
}

extension Store {
    /// `changes`, blocking until it answered.
    func changes(_ channelID: ChannelID, viewer: UserID, after: Int64, limit: Int) throws -> [Message] {
        let result = Mutex<Result<[Message], StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        changes(channelID: channelID, viewer: viewer, afterVersion: after, limit: limit) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try (result.withLock { $0 } ?? .failure(StoreError("no result"))).get()
    }
}
