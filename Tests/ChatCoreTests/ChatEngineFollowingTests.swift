import Testing
@testable import ChatCore

/// A cluster node's engine follows only the channels where a member holds a session here
/// (`Settings.followGraceMilliseconds`): a session opens once its channels are read, what a
/// channel's stream carries while it is read waits and follows in order, members who join
/// get the messages since their join, and a channel without local members is dropped after
/// its grace.
@Suite struct ChatEngineFollowingTests {
    private static let group = Channel(id: "g", type: .group, name: "g", members: ["a", "b"], createdAt: 1, createdBy: "a")

    private static func engine() -> ChatEngine {
        var directory = ChatDirectory()
        for user in ["a", "b", "c"] { directory.upsert(User(id: user, createdAt: 1)) }
        directory.install(group)
        return ChatEngine(directory: directory, settings: ChatEngine.Settings(followGraceMilliseconds: 1_000))
    }

    private static func message(_ seq: Int64, from sender: UserID = "b") -> Message {
        var message = Message(id: "m\(seq)", channelID: "g", seq: seq, senderID: sender, text: "t\(seq)", createdAt: seq)
        message.version = seq
        return message
    }

    private static func event(_ write: StoreWrite, _ result: StoreWriteResult = .done) -> BusEvent {
        BusEvent(node: "other", number: 1, write: write, result: result)
    }

    private static func delivered(_ effects: [EngineEffect]) -> [Int64] {
        effects.compactMap { effect -> Int64? in
            guard case .publishMessage(_, let payload, _, _) = effect else { return nil }
            return parseJSON(Array(payload.dropFirst(0)))?["data"]?["seq"]?.int64Value
        }
    }

    private static func opened(_ effects: [EngineEffect]) -> [SessionID] {
        effects.compactMap { if case .sessionOpened(let id, _) = $0 { return id } else { return nil } }
    }

    private static func followed(_ effects: [EngineEffect]) -> [[ChannelID]] {
        effects.compactMap { if case .followChannels(let channels) = $0 { return channels } else { return nil } }
    }

    @Test func aSessionOpensOnceItsChannelsAreReadAndWhatCameMeanwhileFollowsInOrder() {
        var engine = Self.engine()
        let open = engine.openSession(SessionRequest(id: 1, user: "a"), now: 10)
        #expect(Self.followed(open) == [["g"]])
        #expect(Self.opened(open).isEmpty, "the session waits for its channels")
        #expect(engine.followedChannels == ["g": .loading])
        // Messages 3 and 4 come off the bus while the read is on its way; the read holds up to 3.
        #expect(engine.replicated(Self.event(.insertMessage(Self.message(3)), .message(Self.message(3))), monotonicNow: 0).isEmpty)
        #expect(engine.replicated(Self.event(.insertMessage(Self.message(4)), .message(Self.message(4))), monotonicNow: 0).isEmpty)
        let read = ChannelStreams(channels: ["g"], lastMessages: [Self.message(3)],
                                  readMarks: [ReadMark(channelID: "g", userID: "a", lastReadSeq: 1)], versions: ["g": 3])
        let loaded = engine.streamsLoaded(["g"], read, monotonicNow: 0)
        // 3 is in the read: told (to nobody yet: the session registers after) without being
        // recorded again; 4 follows it.
        #expect(Self.delivered(loaded) == [3, 4])
        #expect(Self.opened(loaded) == [1])
        #expect(engine.directory.newestMessage(of: "g")?.seq == 4)
        #expect(engine.directory.readState(of: "g", for: "a").lastReadSeq == 1)
        #expect(engine.followedChannels == ["g": .current])
        // A second session of a user whose channels are current opens at once, reading nothing.
        let second = engine.openSession(SessionRequest(id: 2, user: "b"), now: 11)
        #expect(Self.opened(second) == [2] && Self.followed(second).isEmpty)
    }

    @Test func aFailedReadStillOpensTheSessionOnWhatTheNodeKnew() {
        var engine = Self.engine()
        _ = engine.openSession(SessionRequest(id: 1, user: "a"), now: 10)
        let loaded = engine.streamsLoaded(["g"], nil, monotonicNow: 0)
        #expect(Self.opened(loaded) == [1])
        #expect(loaded.contains { if case .log(.warning, "bus.follow_read_failed", _, _) = $0 { true } else { false } })
    }

    @Test func membersWhoJoinGetTheMessagesSinceTheirJoinBeforeAnythingNewer() {
        var engine = Self.engine()
        _ = engine.openSession(SessionRequest(id: 1, user: "c"), now: 10)
        var invited = Self.group
        invited.members = ["a", "b", "c"]
        // c joined when the channel's newest was 5; the node did not follow g before.
        let joined = engine.replicated(Self.event(.updateChannel(invited), .channel(lastSeq: 5)), now: 20, monotonicNow: 0)
        #expect(Self.followed(joined) == [["g"]])
        _ = engine.replicated(Self.event(.insertMessage(Self.message(9)), .message(Self.message(9))), monotonicNow: 0)
        let read = ChannelStreams(channels: ["g"], lastMessages: [Self.message(8)], versions: ["g": 8])
        let loaded = engine.streamsLoaded(["g"], read, monotonicNow: 0)
        guard case .readHistory(let id, "g", "", 9?, 5?, 3, _)? = loaded.first(where: {
            if case .readHistory = $0 { true } else { false }
        }) else {
            Issue.record("no catch-up read: \(loaded)")
            return
        }
        #expect(Self.delivered(loaded).isEmpty, "9 waits behind 6…8")
        let caughtUp = engine.historyRead(id, [6, 7, 8].map { Self.message($0) }, monotonicNow: 0)
        #expect(Self.delivered(caughtUp) == [6, 7, 8, 9])
        #expect(engine.followedChannels == ["g": .current])
    }

    @Test func aChannelWithoutLocalMembersIsDroppedAfterItsGrace() {
        var engine = Self.engine()
        _ = engine.openSession(SessionRequest(id: 1, user: "a"), now: 10)
        _ = engine.streamsLoaded(["g"], ChannelStreams(channels: ["g"], lastMessages: [Self.message(2)]), monotonicNow: 0)
        let closed = engine.closeSession(1, now: 100)
        #expect(closed.contains(.checkFollowingLater(afterMilliseconds: 1_000)))
        #expect(engine.followingDue(now: 999) == [.checkFollowingLater(afterMilliseconds: 101)], "not yet: asked again when due")
        let due = engine.followingDue(now: 1_100)
        #expect(due.contains(.unfollowChannels(["g"])))
        #expect(engine.followedChannels.isEmpty)
        #expect(engine.directory.newestMessage(of: "g") == nil, "what it knew of g is stale: dropped")
        // Its stream no longer reaches it; if an event is still on its way, it is ignored.
        #expect(Self.delivered(engine.replicated(Self.event(.insertMessage(Self.message(3)), .message(Self.message(3))),
                                                 monotonicNow: 0)).isEmpty)
        // The next session reads it again.
        #expect(Self.followed(engine.openSession(SessionRequest(id: 2, user: "b"), now: 2_000)) == [["g"]])
    }

    @Test func aMemberWhoLeavesTakesItsSessionsAwayFromTheChannel() {
        var engine = Self.engine()
        _ = engine.openSession(SessionRequest(id: 1, user: "b"), now: 10)
        _ = engine.streamsLoaded(["g"], ChannelStreams(channels: ["g"]), monotonicNow: 0)
        var left = Self.group
        left.members = ["a"]
        let effects = engine.replicated(Self.event(.updateChannel(left), .channel(lastSeq: 0)), now: 50, monotonicNow: 0)
        #expect(effects.contains(.checkFollowingLater(afterMilliseconds: 1_000)))
        #expect(engine.followingDue(now: 1_050).contains(.unfollowChannels(["g"])))
    }

    @Test func aLostBusReadsEveryFollowedChannelAgainAndItsOpenSessionsMissNothingMeanwhile() {
        var engine = Self.engine()
        _ = engine.openSession(SessionRequest(id: 1, user: "a"), now: 10)
        _ = engine.streamsLoaded(["g"], ChannelStreams(channels: ["g"], lastMessages: [Self.message(4)]), monotonicNow: 0)
        #expect(engine.followedStreamsMayBeStale() == [.followChannels(["g"])])
        #expect(engine.followedChannels == ["g": .loading])
        // Session 1 is open while g is read again: 5 and 6 arrive meanwhile; the read has 5.
        for seq: Int64 in [5, 6] {
            _ = engine.replicated(Self.event(.insertMessage(Self.message(seq)), .message(Self.message(seq))), monotonicNow: 0)
        }
        let loaded = engine.streamsLoaded(["g"], ChannelStreams(channels: ["g"], lastMessages: [Self.message(5)]), monotonicNow: 0)
        #expect(Self.delivered(loaded) == [5, 6], "the open session hears both, once")
        #expect(engine.directory.newestMessage(of: "g")?.seq == 6)
    }

    @Test func aMessageTheCatchUpToldIsNotToldAgainFromTheWaitingEvents() {
        var engine = Self.engine()
        _ = engine.openSession(SessionRequest(id: 1, user: "c"), now: 10)
        var invited = Self.group
        invited.members = ["a", "b", "c"]
        _ = engine.replicated(Self.event(.updateChannel(invited), .channel(lastSeq: 5)), now: 20, monotonicNow: 0)
        // 7 was committed before the read and arrived after the subscription: in both.
        _ = engine.replicated(Self.event(.insertMessage(Self.message(7)), .message(Self.message(7))), monotonicNow: 0)
        let loaded = engine.streamsLoaded(["g"], ChannelStreams(channels: ["g"], lastMessages: [Self.message(7)]), monotonicNow: 0)
        guard case .readHistory(let id, _, _, _, _, _, _)? = loaded.first(where: { if case .readHistory = $0 { true } else { false } })
        else {
            Issue.record("no catch-up read")
            return
        }
        let caughtUp = engine.historyRead(id, [6, 7].map { Self.message($0) }, monotonicNow: 0)
        #expect(Self.delivered(caughtUp) == [6, 7])
    }

    @Test func oneNodeFollowsEveryChannelWithoutReading() {
        var directory = ChatDirectory()
        directory.upsert(User(id: "a", createdAt: 1))
        directory.install(Self.group)
        var engine = ChatEngine(directory: directory)
        let open = engine.openSession(SessionRequest(id: 1, user: "a"), now: 10)
        #expect(Self.opened(open) == [1] && Self.followed(open).isEmpty)
        #expect(engine.followedChannels.isEmpty)
    }
}
