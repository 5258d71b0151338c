import ChatCore
import Dispatch
import Storage
import Synchronization
import Testing

/// What both backends' moderation tests (§16) write and expect: `ModerationStorageTests`
/// on SQLite, `PostgresModerationTests` on PostgreSQL.
enum ModerationFixture {
    /// A user or channel write's answer: `.done`, or a channel's `.channel(lastSeq:)`.
    static func isWritten(_ result: StoreWriteResult) -> Bool {
        if case .channel = result { return true }
        return result == .done
    }

    /// Every moderation field set, with each kind of ban (plain and shadow, with and without
    /// an end) and of mute (with and without an end); the creator's role overridden.
    static let moderated = Channel(
        id: "moderated", type: .group, name: "Moderated", members: ["alice", "bob", "carol"], createdAt: 2_000,
        createdBy: "alice", roles: ["alice": .member, "bob": .moderator, "carol": .owner], frozen: true,
        slowModeSeconds: 30,
        bans: ["dave": Ban(), "erin": Ban(shadow: true), "frank": Ban(untilMs: 9_000_000),
               "gina": Ban(shadow: true, untilMs: 9_500_000)],
        mutes: ["bob": ChannelMute(), "carol": ChannelMute(untilMs: 8_000_000)])

    /// Created without moderation fields, then updated to hold them.
    static var updated: Channel {
        var channel = moderated
        channel.id = "updated"
        channel.members = ["carol", "bob"]
        channel.roles = ["bob": .owner]
        channel.frozen = false
        channel.slowModeSeconds = 3_600
        channel.bans["hank"] = Ban(shadow: true)
        return channel
    }

    /// Created with moderation fields, then updated back to none.
    static let cleared = Channel(id: "cleared", type: .open, name: "Open", members: [], createdAt: 2_001, createdBy: "bob")

    static var channels: [Channel] { [moderated, updated, cleared] }

    /// Every user as stored last: carol's ban was lifted by a later upsert.
    static let users: [User] = [
        User(id: "alice", name: "Alice", createdAt: 10, mutedUsers: ["bob", "carol"], ban: Ban(shadow: true, untilMs: 7_000_000)),
        User(id: "bob", name: "Bob", createdAt: 11, ban: Ban()),
        User(id: "carol", name: "Carol", createdAt: 12, mutedUsers: ["alice"]),
        User(id: "dave", name: "Dave", createdAt: 13, ban: Ban(untilMs: 1)),
        User(id: "erin", name: "Erin", createdAt: 14, ban: Ban(shadow: true)),
    ]

    static var writes: [StoreWrite] {
        var writes: [StoreWrite] = []
        for user in users {
            if user.id == "carol" {
                var banned = user
                banned.ban = Ban(shadow: true)
                banned.mutedUsers = ["bob", "dave"]
                writes.append(.upsertUser(banned))
            }
            writes.append(.upsertUser(user))
        }
        writes.append(.createChannel(moderated))
        var plain = updated
        (plain.roles, plain.frozen, plain.slowModeSeconds, plain.bans, plain.mutes) = ([:], false, 0, [:], [:])
        writes.append(.createChannel(plain))
        writes.append(.updateChannel(updated))
        var full = moderated
        full.id = cleared.id
        full.type = cleared.type
        full.members = []
        writes.append(.createChannel(full))
        writes.append(.updateChannel(cleared))
        return writes
    }

    /// Three reports of messages in `c1`, as the engine asks for them (id 0: the store assigns it).
    static let flags: [Flag] = (1...3).map { n in
        Flag(channelID: "c1", seq: Int64(n), messageID: "m\(n)", reporterID: "carol", senderID: "bob", reason: "spam \(n)",
             createdAt: 5_000 + Int64(n))
    }

    /// What a schema-5 store wrote (as SQL both backends run; `true`/`false` read as 1/0 in SQLite).
    static let schemaFiveRows: [String] = [
        """
        INSERT INTO users (id, name, image, metadata, created_at, last_seen_at, deactivated) VALUES
            ('alice', 'Alice', 'https://img/a.png', '{"team":"blue"}', 10, 20, false),
            ('bob', 'Bob', '', '{}', 11, 0, true)
        """,
        """
        INSERT INTO channels (id, type, name, distinct_flag, is_one_to_one, push_from_blocked, created_at, created_by,
            inviter_views, last_seq, version) VALUES
            ('dm', 'group', '', true, true, false, 30, 'alice', '', 2, 2),
            ('team', 'open', 'Team', false, false, true, 31, 'bob', 'bob=alice', 0, 0)
        """,
        """
        INSERT INTO channel_members (channel_id, user_id, position) VALUES
            ('dm', 'alice', 0), ('dm', 'bob', 1), ('team', 'bob', 0), ('team', 'alice', 1)
        """,
        """
        INSERT INTO messages (channel_id, seq, id, sender_id, text, created_at, hidden_from, version, created_version) VALUES
            ('dm', 1, 'm1', 'alice', 'hello', 40, NULL, 1, 1),
            ('dm', 2, 'm2', 'bob', 'psst', 41, 'alice', 2, 2)
        """,
        "INSERT INTO read_marks (channel_id, user_id, last_read_seq) VALUES ('dm', 'alice', 1), ('dm', 'bob', 2)",
        "INSERT INTO blocks (blocker, blocked, created_at) VALUES ('alice', 'bob', 39)",
    ]

    /// `schemaFiveRows` as a newer build reads them: no moderation fields set.
    static let schemaFiveUsers = [
        User(id: "alice", name: "Alice", image: "https://img/a.png", metadata: ["team": "blue"], createdAt: 10, lastSeenAt: 20),
        User(id: "bob", name: "Bob", createdAt: 11, deactivated: true),
    ]
    static let schemaFiveChannels = [
        Channel(id: "dm", type: .group, name: "", members: ["alice", "bob"], distinct: true, isOneToOne: true,
                createdAt: 30, createdBy: "alice"),
        Channel(id: "team", type: .open, name: "Team", members: ["bob", "alice"], pushFromBlockedUsers: true, createdAt: 31,
                createdBy: "bob", inviterViews: ["bob": ["alice"]]),
    ]
    static let schemaFiveMessages = [
        Message(id: "m1", channelID: "dm", seq: 1, senderID: "alice", text: "hello", createdAt: 40, version: 1),
        Message(id: "m2", channelID: "dm", seq: 2, senderID: "bob", text: "psst", createdAt: 41, hiddenFrom: "alice", version: 2),
    ]

    /// Checks a snapshot of `schemaFiveRows` after the migration: every row as it was.
    static func checkSchemaFive(_ snapshot: StoreSnapshot) {
        #expect(snapshot.users == schemaFiveUsers)
        #expect(snapshot.channels == schemaFiveChannels)
        #expect(snapshot.channelVersions == ["dm": 2])
        #expect(snapshot.lastMessages == [schemaFiveMessages[1]])
        #expect(snapshot.lastVisibleMessages.map(\.viewer) == ["alice"])
        #expect(snapshot.lastVisibleMessages.map(\.message) == [schemaFiveMessages[0]])
        #expect(snapshot.blocks.map { "\($0.blocker)>\($0.blocked)" } == ["alice>bob"])
        #expect(Set(snapshot.readMarks.map { "\($0.channelID)/\($0.userID)@\($0.lastReadSeq)" }) == ["dm/alice@1", "dm/bob@2"])
    }
}

/// `c1` (alice, bob, carol): bob was shadow-banned after his first messages, so what he sent
/// since is hidden from everyone but him (`*`), and an edit he made then hid an earlier one
/// too; one message of alice is hidden from carol (§5); replies to seq 1 of each kind.
/// `record` keeps what every write answered; the checks compare each read with the messages
/// `Message.isHidden(from:)` leaves to its viewer.
struct HiddenFromEveryoneScenario {
    static let viewers: [UserID] = ["alice", "bob", "carol"]
    static let limits = [1, 2, 3, 4, 100]
    private(set) var stored: [Int64: Message] = [:]

    static var writes: [StoreWrite] {
        var writes: [StoreWrite] = []
        for n in 1...14 {
            let (sender, hidden): (UserID, UserID?) = switch n {
            case 2: ("bob", nil)
            case 3, 6, 7, 8, 9, 12: ("bob", Message.hiddenFromEveryone)
            case 5: ("alice", "carol")
            default: (n % 2 == 0 ? "carol" : "alice", nil)
            }
            writes.append(.insertMessage(Fixture.message("m\(n)", in: "c1", from: sender, hiddenFrom: hidden)))
        }
        writes.append(.changeMessage(MessageChange(
            channelID: "c1", seq: 2, actor: "bob", at: 9_000,
            action: .edit(text: "edited while shadow-banned", dataJSON: nil, mentionedUserIDs: [],
                          hideFrom: Message.hiddenFromEveryone))))
        let replies: [(UserID, UserID?)] = [
            ("bob", Message.hiddenFromEveryone), ("bob", Message.hiddenFromEveryone), ("carol", nil), ("alice", "carol"),
        ]
        for (n, (sender, hidden)) in replies.enumerated() {
            var reply = Fixture.message("r\(n)", in: "c1", from: sender, hiddenFrom: hidden)
            reply.parentSeq = 1
            writes.append(.insertMessage(reply))
        }
        return writes
    }

    mutating func record(_ result: Result<StoreWriteResult, StoreError>) {
        switch result {
        case .success(.message(let message)):
            stored[message.seq] = message
            if let parent = message.parentSeq {
                stored[parent]?.version = message.version
                stored[parent]?.replyCount += 1
            }
        case .success(.changed(let message, _)):
            stored[message.seq] = message
        default:
            Issue.record("unexpected result \(result)")
        }
    }

    /// The seqs `viewer` may read, ascending.
    func visible(to viewer: UserID) -> [Int64] {
        stored.values.filter { !$0.isHidden(from: viewer) }.map(\.seq).sorted()
    }

    /// Every history page (newest, before and after every seq) and every `changes` page
    /// (after every version), for every viewer and limit.
    func checkEveryPage(history: (UserID, Int64?, Int64?, Int) async throws -> [Message],
                        changes: (UserID, Int64, Int) async throws -> [Message]) async throws {
        let lastSeq = stored.keys.max() ?? 0, lastVersion = stored.values.map(\.version).max() ?? 0
        for viewer in Self.viewers {
            let visible = visible(to: viewer)
            for limit in Self.limits {
                let newest = try await history(viewer, nil, nil, limit)
                #expect(newest.map(\.seq) == Array(visible.suffix(limit)), "\(viewer) newest \(limit)")
                #expect(newest.allSatisfy { $0 == stored[$0.seq] })
                for bound in 0...(lastSeq + 1) {
                    #expect(try await history(viewer, bound, nil, limit).map(\.seq) == Array(visible.filter { $0 < bound }.suffix(limit)),
                            "\(viewer) before \(bound) limit \(limit)")
                    #expect(try await history(viewer, nil, bound, limit).map(\.seq) == Array(visible.filter { $0 > bound }.prefix(limit)),
                            "\(viewer) after \(bound) limit \(limit)")
                }
                for after in 0...lastVersion {
                    let expected = visible.compactMap { stored[$0] }.filter { $0.version > after }
                        .sorted { ($0.version, $0.seq) < ($1.version, $1.seq) }.prefix(limit)
                    #expect(try await changes(viewer, after, limit) == Array(expected), "\(viewer) changes after \(after) limit \(limit)")
                }
            }
        }
    }

    /// The reply tallies of seq 1 `attributions` must answer for `viewer` reading the rows of
    /// `users`: those of `users`, and those hidden from the viewer.
    func expectedReplies(users: Set<UserID>, viewer: UserID) -> Set<String> {
        var counts: [String: Int] = [:]
        for reply in stored.values where reply.parentSeq == 1 && (users.contains(reply.senderID) || reply.isHidden(from: viewer)) {
            counts["\(reply.senderID)/\(reply.hiddenFrom ?? "-")", default: 0] += 1
        }
        return Set(counts.map { "1:\($0.key)x\($0.value)" })
    }

    static func replies(_ attributions: MessageAttributions) -> Set<String> {
        Set(attributions.replies.map { "\($0.parentSeq):\($0.tally.sender)/\($0.tally.hiddenFrom ?? "-")x\($0.tally.count)" })
    }

    /// Channels whose newest message is hidden from someone, next to messages hidden from
    /// everyone but their sender, for the start-up snapshot's last visible messages.
    static var lastVisibleWrites: [StoreWrite] {
        let star = Message.hiddenFromEveryone
        let plan: [(ChannelID, [(UserID, UserID?)])] = [
            // carol's newest visible is m1: bob's `*` message is not hers.
            ("x1", [("alice", nil), ("bob", star), ("alice", "carol")]),
            // the others' newest is m2, hidden from carol alone: never a `*` one.
            ("x2", [("alice", nil), ("alice", "carol"), ("bob", star)]),
            // carol's newest visible is her own `*` message.
            ("x3", [("alice", nil), ("carol", star), ("alice", "carol")]),
            // nothing is visible to anyone but bob: no entry.
            ("x4", [("bob", star), ("bob", star)]),
        ]
        var writes: [StoreWrite] = []
        for (channel, messages) in plan {
            writes.append(.createChannel(Fixture.group(channel, ["alice", "bob", "carol"])))
            for (n, (sender, hidden)) in messages.enumerated() {
                writes.append(.insertMessage(Fixture.message("\(channel)-\(n + 1)", in: channel, from: sender, hiddenFrom: hidden)))
            }
        }
        return writes
    }

    static func checkLastVisible(_ snapshot: StoreSnapshot) {
        #expect(snapshot.lastVisibleMessages.map { "\($0.viewer)>\($0.message.channelID):\($0.message.seq)" }
                == ["carol>x1:1", "*>x2:2", "carol>x3:2"])
        #expect(snapshot.lastMessages.map(\.hiddenFrom) == ["carol", "*", "carol", "*"])
        #expect(snapshot.messagesAfterMarks.filter { $0.channelID == "x4" }.map(\.hiddenFrom) == ["*", "*"])
        #expect(snapshot.messagesAfterMarks.filter { $0.channelID == "x1" }.map(\.hiddenFrom) == [nil, "*", "carol"])
    }
}

/// Calls a store read and waits for its answer without blocking a thread.
func answer<T: Sendable>(_ read: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) async throws -> T {
    try await withCheckedContinuation { continuation in read { continuation.resume(returning: $0) } }.get()
}

/// Calls a store read and blocks until its answer (the SQLite store's readers are its own threads).
func blocking<T: Sendable>(_ read: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) throws -> T {
    let result = Mutex<Result<T, StoreError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    read { outcome in
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try (result.withLock { $0 } ?? .failure(StoreError("no result"))).get()
}
