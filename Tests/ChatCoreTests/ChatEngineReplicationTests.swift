import Testing
@testable import ChatCore

/// Writes another node committed, as they reach this node's engine off the cluster bus
/// (PROTOCOL.md §13): the state changes as if they had committed here, this node's
/// connections get their events, nobody gets a reply or a push.
@Suite("ChatEngine replication")
struct ChatEngineReplicationTests {
    private static func event(_ write: StoreWrite, _ result: StoreWriteResult = .done) -> BusEvent {
        BusEvent(node: "other", number: 1, write: write, result: result)
    }

    private static let group = Channel(id: "g", type: .group, name: "g", members: ["a", "b"], createdAt: 1, createdBy: "a")

    @Test func aChannelFromAnotherNodeIsInstalledAndAnnounced() {
        var engine = makeEngine(users: ["a", "b", "c"])
        let created = engine.replicated(Self.event(.createChannel(Self.group)), monotonicNow: 0)
        #expect(engine.directory.channels["g"]?.members == ["a", "b"])
        #expect(created.contains(.addToChannel(["a", "b"], "g")))
        #expect(created.published.flatMap(\.users).sorted() == ["a", "b"])
        #expect(created.replies.isEmpty)
        var invited = Self.group
        invited.members = ["a", "c"]
        let updated = engine.replicated(Self.event(.updateChannel(invited)), monotonicNow: 0)
        #expect(updated.contains(.addToChannel(["c"], "g")))
        #expect(updated.contains(.removeFromChannel(["b"], "g")))
    }

    @Test func aMessageFromAnotherNodeIsPublishedHereWithItsBlockCheck() {
        var engine = makeEngine(users: ["a", "b"])
        _ = engine.replicated(Self.event(.setBlock(blocker: "b", blocked: "a", isBlocked: true, at: 1)), monotonicNow: 0)
        _ = engine.replicated(Self.event(.createChannel(Self.group)), monotonicNow: 0)
        let message = Message(id: "m1", channelID: "g", seq: 1, senderID: "a", text: "hi", createdAt: 5)
        let effects = engine.replicated(Self.event(.insertMessage(message), .message(message)), monotonicNow: 0)
        guard case .publishMessage(let channel, let payload, let origin, let excluding)? = effects.first else {
            Issue.record("no publish: \(effects)")
            return
        }
        #expect(channel == "g" && excluding == nil)
        #expect(origin.related == [engine.number(for: "b")], "b blocked a: the fan-out must check b")
        #expect(String(decoding: payload, as: UTF8.self).contains(#""seq":1"#))
        #expect(engine.directory.newestMessage(of: "g")?.id == "m1")
        #expect(effects.replies.isEmpty)
        #expect(!effects.contains { if case .push = $0 { true } else { false } }, "the committing node pushes")
    }

    @Test func aBlockFromAnotherNodeChangesTheGraphAndTellsTheBlockersConnections() {
        var engine = makeEngine(users: ["a", "b"])
        let blocked = engine.replicated(Self.event(.setBlock(blocker: "a", blocked: "b", isBlocked: true, at: 1)), monotonicNow: 0)
        #expect(engine.directory.blocks.hasBlocked("a", "b"))
        #expect(blocked.blockChanges.map(\.isBlocked) == [true])
        #expect(blocked.published.map(\.users) == [["a"]])
        #expect(blocked.published.first?.text.contains("user.blocked") == true)
        _ = engine.replicated(Self.event(.setBlock(blocker: "a", blocked: "b", isBlocked: false, at: 2)), monotonicNow: 0)
        #expect(!engine.directory.blocks.hasBlocked("a", "b"))
    }

    @Test func usersAndDeactivationsFromAnotherNode() {
        var engine = makeEngine(users: ["a"])
        _ = engine.replicated(Self.event(.upsertUser(User(id: "z", name: "Zed", createdAt: 3))), monotonicNow: 0)
        #expect(engine.directory.users["z"]?.name == "Zed")
        _ = engine.settle(engine.openSession(SessionRequest(id: 3, user: "z"), now: 4), .committed(.done))
        let effects = engine.replicated(Self.event(.setUserDeactivated("z", true)), monotonicNow: 0)
        #expect(engine.directory.users["z"]?.deactivated == true)
        #expect(effects == [.closeSessions([3], .deactivated)])
    }

    @Test(arguments: [
        StoreWrite.upsertUser(User(id: "u", name: "N \"q\"", image: "i", metadata: ["k": "v", "ü": "ß"], createdAt: 1,
                                   lastSeenAt: 2, deactivated: true)),
        .setUserDeactivated("u", false),
        .createChannel(Channel(id: "c", type: .open, name: "n", members: [], distinct: true, isOneToOne: false,
                               pushFromBlockedUsers: true, createdAt: 3, createdBy: "u", inviterViews: ["x": ["y", "z"]])),
        .updateChannel(ChatEngineReplicationTests.group),
        .setBlock(blocker: "a", blocked: "b", isBlocked: true, at: 9),
    ])
    func busEventsRoundTrip(write: StoreWrite) throws {
        let event = BusEvent(node: "n1", number: 42, write: write, result: .done)
        #expect(try BusEvent.decode(event.encoded()) == event)
    }

    @Test func aMessageEventRoundTripsWithItsStoredSeq() throws {
        let sent = Message(id: "m", channelID: "c", senderID: "s", text: "line\nbreak", dataJSON: #"{"a":1}"#,
                           clientMessageID: "k", createdAt: 4, hiddenFrom: "h")
        var stored = sent
        stored.seq = 12
        let event = BusEvent(node: "n", number: UInt64.max, write: .insertMessage(sent), result: .message(stored))
        #expect(try BusEvent.decode(event.encoded()) == event)
        #expect(throws: BusEvent.DecodeError.self) { try BusEvent.decode(Array(#"{"v":2}"#.utf8)) }
        #expect(throws: BusEvent.DecodeError.self) { try BusEvent.decode(Array("not json".utf8)) }
    }
}
