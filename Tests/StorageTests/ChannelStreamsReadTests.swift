import ChatCore
import Logging
import PostgresStorage
import ServiceTestSupport
import Storage
import Testing
@testable import SQLiteStorage

/// `Store.streams(of:)`, what a cluster node reads for the channels it starts following,
/// holds exactly what the start-up snapshot holds for those channels (newest messages, the
/// views of members a newest message is hidden from, read marks, unread headers, versions),
/// and nothing of the others, on both backends.
@Suite struct ChannelStreamsReadTests {
    /// Messages in `c1` (one deleted, one reaction) and in the 1-to-1 `dm` (the newest hidden
    /// from bob), read marks in both, and an untouched `quiet` channel.
    static let writes: [StoreWrite] = {
        var writes: [StoreWrite] = ["alice", "bob", "carol"].map { .upsertUser(Fixture.user($0)) }
        writes.append(.createChannel(Fixture.group("c1", ["alice", "bob", "carol"])))
        writes.append(.createChannel(Fixture.group("dm", ["alice", "bob"], oneToOne: true)))
        writes.append(.createChannel(Fixture.group("quiet", ["carol", "bob"])))
        for index in 1...6 { writes.append(.insertMessage(Fixture.message("c\(index)", in: "c1", from: index % 2 == 0 ? "bob" : "alice"))) }
        writes.append(.markRead(channelID: "c1", userID: "bob", seq: 2))
        writes.append(.markRead(channelID: "c1", userID: "carol", seq: 5))
        writes.append(.changeMessage(MessageChange(channelID: "c1", seq: 4, actor: "bob", at: 4_000, action: .delete)))
        writes.append(.changeMessage(MessageChange(channelID: "c1", seq: 5, actor: "carol", at: 4_001, action: .addReaction("+1"))))
        writes.append(.insertMessage(Fixture.message("d1", in: "dm", from: "alice")))
        writes.append(.insertMessage(Fixture.message("d2", in: "dm", from: "alice", hiddenFrom: "bob")))
        writes.append(.markRead(channelID: "dm", userID: "bob", seq: 1))
        return writes
    }()

    struct Comparable: Equatable {
        var lastMessages: [Message]
        var lastVisible: [String]
        var readMarks: [String]
        var headers: [MessageHeader]
        var versions: [ChannelID: Int64]
    }

    static func comparable(lastMessages: [Message], lastVisible: [(viewer: UserID, message: Message)], readMarks: [ReadMark],
                           headers: [MessageHeader], versions: [ChannelID: Int64], of channels: Set<ChannelID>) -> Comparable {
        Comparable(
            lastMessages: lastMessages.filter { channels.contains($0.channelID) }.sorted { $0.channelID < $1.channelID },
            lastVisible: lastVisible.filter { channels.contains($0.message.channelID) }.map { "\($0.viewer):\($0.message.id)" }.sorted(),
            readMarks: readMarks.filter { channels.contains($0.channelID) }.map { "\($0.channelID):\($0.userID):\($0.lastReadSeq)" }.sorted(),
            headers: headers.filter { channels.contains($0.channelID) },
            versions: versions.filter { channels.contains($0.key) })
    }

    static func check(streams: ChannelStreams, against snapshot: StoreSnapshot, of channels: Set<ChannelID>) {
        let read = comparable(lastMessages: streams.lastMessages, lastVisible: streams.lastVisible, readMarks: streams.readMarks,
                              headers: streams.messagesAfterMarks, versions: streams.versions, of: Set(streams.channels))
        let expected = comparable(lastMessages: snapshot.lastMessages, lastVisible: snapshot.lastVisibleMessages,
                                  readMarks: snapshot.readMarks, headers: snapshot.messagesAfterMarks,
                                  versions: snapshot.channelVersions, of: channels)
        #expect(read == expected)
        #expect(Set(streams.channels) == channels)
        #expect(streams.lastMessages.allSatisfy { channels.contains($0.channelID) }, "nothing of the other channels")
        #expect(streams.readMarks.allSatisfy { channels.contains($0.channelID) })
        #expect(streams.messagesAfterMarks.allSatisfy { channels.contains($0.channelID) })
        #expect(!read.lastMessages.isEmpty && !read.readMarks.isEmpty && !read.headers.isEmpty)
    }

    static func streams(_ store: some Store, of channels: [ChannelID]) async throws -> ChannelStreams {
        try await withCheckedContinuation { continuation in
            store.streams(of: channels) { continuation.resume(returning: $0) }
        }.get()
    }

    @Test func sqlite() async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteStore(directory: directory.path)
        for write in Self.writes { try store.write(write) }
        let snapshot = try store.loadSnapshot()
        #expect(snapshot.lastVisibleMessages.contains { $0.viewer == "bob" && $0.message.id == "d1" })
        for channels in [["c1"], ["dm"], ["c1", "dm", "quiet"]] {
            Self.check(streams: try await Self.streams(store, of: channels), against: snapshot, of: Set(channels))
        }
        let unknown = try await Self.streams(store, of: ["nope"])
        #expect(unknown.lastMessages.isEmpty && unknown.readMarks.isEmpty && unknown.versions.isEmpty)
    }
}

@Suite(.enabled(if: PostgresTestDatabase.isAvailable, "CHAT_TEST_POSTGRES_URL is not set"), .serialized)
struct PostgresChannelStreamsReadTests {
    @Test func postgres() async throws {
        try await PostgresTestDatabase.with { database in
            let logger = Logger(label: "postgres-streams-tests")
            do {
                let store = try await PostgresStore.open(url: database.url, logger: logger)
                for write in ChannelStreamsReadTests.writes { try await store.writeAsync(write) }

            }
            let store = try await PostgresStore.open(url: database.url, logger: logger)
            let snapshot = try store.loadSnapshot()
            for channels in [["c1"], ["dm"], ["c1", "dm", "quiet"]] {
                ChannelStreamsReadTests.check(streams: try await ChannelStreamsReadTests.streams(store, of: channels),
                                              against: snapshot, of: Set(channels))
            }

        }
    }
}
