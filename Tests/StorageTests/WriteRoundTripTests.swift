import ChatCore
import Storage
import Testing
@testable import SQLiteStorage

@Suite struct WriteRoundTripTests {
    @Test func everyWriteRoundTripsThroughReopen() throws {
        let directory = TemporaryDirectory()
        var alice = User(id: "alice", name: "Alice", image: "https://img/a.png",
                         metadata: ["team": "blue", "quote": "\"hi\" / ünïcödé"], createdAt: 10, lastSeenAt: 20)
        let bob = User(id: "bob", name: "Bob", createdAt: 11)
        let carol = User(id: "carol", createdAt: 12)
        var dm = Fixture.group("dm", ["alice", "bob"], oneToOne: true)
        var team = Channel(id: "team", type: .group, name: "Team", members: ["carol", "alice", "bob"], distinct: true,
                           pushFromBlockedUsers: true, createdAt: 30, createdBy: "carol")
        let lobby = Channel(id: "lobby", type: .open, name: "", members: [], createdAt: 31, createdBy: "bob")
        var expectedLast: [Message] = []
        var dmVisibleToAlice: Message?

        do {
            let store = try SQLiteStore(directory: directory.path)
            for user in [alice, bob, carol] { #expect(try store.commit(.upsertUser(user)).get() == .done) }
            alice.name = "Alice A."
            alice.metadata = [:]
            alice.lastSeenAt = 99
            #expect(try store.commit(.upsertUser(alice)).get() == .done)
            for channel in [dm, team, lobby] { #expect(try store.commit(.createChannel(channel)).get() == .channel(lastSeq: 0)) }
            #expect(try store.commit(.setUserDeactivated("carol", true)).get() == .done)

            let first = try #require(store.store(Message(id: "m1", channelID: "dm", senderID: "alice", text: "hello",
                                                          dataJSON: #"{"k":[1,2]}"#, clientMessageID: "c-1", createdAt: 40)))
            #expect(first.seq == 1 && first.dataJSON == #"{"k":[1,2]}"# && first.clientMessageID == "c-1")
            dmVisibleToAlice = first
            #expect(try store.commit(.setBlock(blocker: "alice", blocked: "bob", isBlocked: true, at: 41)).get() == .done)
            #expect(try store.commit(.setBlock(blocker: "alice", blocked: "bob", isBlocked: true, at: 42)).get() == .done)
            #expect(try store.commit(.setBlock(blocker: "bob", blocked: "carol", isBlocked: true, at: 43)).get() == .done)
            #expect(try store.commit(.setBlock(blocker: "carol", blocked: "alice", isBlocked: true, at: 44)).get() == .done)
            #expect(try store.commit(.setBlock(blocker: "carol", blocked: "alice", isBlocked: false, at: 45)).get() == .done)
            let hidden = try #require(store.store(Fixture.message("m2", in: "dm", from: "bob", hiddenFrom: "alice", at: 50)))
            #expect(hidden.seq == 2 && hidden.hiddenFrom == "alice")
            expectedLast.append(hidden)

            team.name = "Team 2"
            team.members = ["carol", "bob"]
            team.pushFromBlockedUsers = false
            #expect(try store.commit(.updateChannel(team)).get() == .channel(lastSeq: 0))
            dm.isOneToOne = false
            dm.members.append("carol")
            #expect(try store.commit(.updateChannel(dm)).get() == .channel(lastSeq: 2), "its newest seq at the update")
            expectedLast.append(try #require(store.store(Fixture.message("m3", in: "team", from: "carol", text: "", at: 60))))
            store.flush()
        }

        let reopened = try SQLiteStore(directory: directory.path)
        let snapshot = try reopened.loadSnapshot()
        alice.deactivated = false
        var deactivatedCarol = carol
        deactivatedCarol.deactivated = true
        #expect(snapshot.users == [alice, bob, deactivatedCarol])
        #expect(snapshot.channels == [dm, team, lobby])
        #expect(snapshot.lastMessages == expectedLast)
        #expect(snapshot.lastVisibleMessages.map(\.viewer) == ["alice"])
        #expect(snapshot.lastVisibleMessages.map(\.message) == [try #require(dmVisibleToAlice)])
        #expect(snapshot.blocks.map { "\($0.blocker)>\($0.blocked)" } == ["alice>bob", "bob>carol"])
    }

    @Test func failingWritesReportErrorsWithoutTouchingOthers() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        #expect(throws: StoreError.self) { try store.commit(.setUserDeactivated("ghost", true)).get() }
        #expect(throws: StoreError.self) { try store.commit(.updateChannel(Fixture.group("nope", ["alice"]))).get() }
        #expect(throws: StoreError.self) { try store.commit(.createChannel(Fixture.group("c1", ["alice"]))).get() }
        #expect(throws: StoreError.self) { try store.commit(.insertMessage(Fixture.message("x", in: "nope", from: "alice"))).get() }
        let snapshot = try store.loadSnapshot()
        #expect(snapshot.channels.map(\.id) == ["c1"])
        #expect(snapshot.channels.first?.members == ["alice", "bob", "carol"])
    }

    @Test func schemaVersionIsSetAndReopenIsIdempotent() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteStore(directory: directory.path)
        let connection = try SQLiteConnection(path: store.databasePath)
        #expect(try connection.integerPragma("user_version") == Migrations.latestVersion)
        #expect(try connection.textPragma("journal_mode") == "wal")
        _ = try SQLiteStore(directory: directory.path)
        #expect(try connection.integerPragma("user_version") == Migrations.latestVersion)
    }
}
