import Testing
@testable import ChatCore

/// PROTOCOL.md §14 typing in large channels: one `typing.users` list per channel and half
/// second instead of each typist's events, listing for each connection only the typists it
/// may hear (§5 blocks, §16 shadow bans and mutes).
@Suite("ChatEngine typing lists")
struct ChatEngineTypingListTests {
    /// Lists above 3 members: "big" has 5, "small" 3.
    private static let big = Channel(id: "big", type: .group, name: "big", members: ["a", "b", "c", "d", "e"],
                                     createdAt: 1, createdBy: "a")
    private static let small = Channel(id: "small", type: .group, name: "small", members: ["a", "b", "c"],
                                       createdAt: 1, createdBy: "a")

    private static func engine(mode: DeliveryPolicy.Mode = .standard, channel: Channel = big) -> ChatEngine {
        var directory = ChatDirectory()
        for user in ["a", "b", "c", "d", "e"] { directory.upsert(User(id: user, createdAt: 1)) }
        var engine = ChatEngine(directory: directory, settings: .init(blockingMode: mode, typingListAboveMembers: 3))
        engine.directory.install(channel)
        return engine
    }

    private static func requester(_ session: SessionID) -> Requester { .session(session, requestID: .number("1")) }

    private static func start(_ engine: inout ChatEngine, _ user: UserID, at now: Milliseconds,
                              in channel: ChannelID = "big") -> [EngineEffect] {
        engine.typingStart(channel, from: user, session: nil, for: ChatEngineTypingListTests.requester(0), monotonicNow: now)
    }

    /// The lists sent to everyone (the shared payload) as (userIds, count, users skipped).
    private static func sharedLists(_ effects: [EngineEffect]) -> [(ids: [String], count: Int, skipping: Set<UserNumber>)] {
        effects.compactMap { effect in
            guard case .publishChange(_, let payload, let skipping, _) = effect, let list = list(payload) else { return nil }
            return (list.ids, list.count, skipping)
        }
    }

    /// The lists sent to single connections, by session.
    private static func sessionLists(_ effects: [EngineEffect]) -> [SessionID: [String]] {
        var lists: [SessionID: [String]] = [:]
        for effect in effects {
            guard case .publishToSessions(let sessions, let payload) = effect, let list = list(payload) else { continue }
            for session in sessions { lists[session] = list.ids }
        }
        return lists
    }

    private static func list(_ payload: [UInt8]) -> (ids: [String], count: Int)? {
        guard case .object(let frame)? = parseJSON(payload), frame["event"] == .string("typing.users"),
              case .object(let data)? = frame["data"], case .array(let ids)? = data["userIds"],
              case .number(let count)? = data["count"] else { return nil }
        return (ids.compactMap { if case .string(let id) = $0 { id } else { nil } }, Int(count) ?? -1)
    }

    private static func checks(_ effects: [EngineEffect]) -> [Milliseconds] {
        effects.compactMap { if case .checkTypingListLater(_, _, let after) = $0 { after } else { nil } }
    }

    /// The engine and its list checks, fired as the test's clock reaches them (as the driver's timers would).
    private struct World {
        var engine: ChatEngine
        var pending: [(at: Milliseconds, token: UInt64)] = []

        init(mode: DeliveryPolicy.Mode = .standard) { engine = ChatEngineTypingListTests.engine(mode: mode) }

        @discardableResult
        mutating func note(_ effects: [EngineEffect], at now: Milliseconds) -> [EngineEffect] {
            for case .checkTypingListLater(_, let token, let after) in effects { pending.append((now + after, token)) }
            return effects
        }

        mutating func start(_ user: UserID, at now: Milliseconds) -> [EngineEffect] {
            fire(upTo: now) + note(engine.typingStart("big", from: user, session: nil, for: ChatEngineTypingListTests.requester(0), monotonicNow: now), at: now)
        }

        mutating func stop(_ user: UserID, at now: Milliseconds) -> [EngineEffect] {
            fire(upTo: now) + note(engine.typingStop("big", from: user, session: nil, for: ChatEngineTypingListTests.requester(0), monotonicNow: now), at: now)
        }

        /// Runs the checks due by `now`, in time order.
        mutating func fire(upTo now: Milliseconds) -> [EngineEffect] {
            var effects: [EngineEffect] = []
            while let next = pending.filter({ $0.at <= now }).min(by: { $0.at < $1.at }) {
                pending.removeAll { $0.at == next.at && $0.token == next.token }
                effects += note(engine.typingListDue("big", token: next.token, monotonicNow: next.at), at: next.at)
            }
            return effects
        }
    }

    @Test("the first typist goes out at once; those within the half second after it go out together at its end")
    func oneListPerInterval() {
        var world = World()
        let first = world.start("a", at: 1_000)
        #expect(Self.sharedLists(first).map(\.ids) == [["a"]])
        #expect(!first.contains { if case .publishMessage = $0 { true } else { false } }, "no typing.start of its own")
        #expect(first.contains(.relayTyping(started: true, "big", user: "a")), "other nodes still hear the typist")
        #expect(Self.checks(first) == [TypingSummaries.staleAfter], "next: when a would go stale")
        let second = world.start("b", at: 1_100)
        #expect(Self.sharedLists(second).isEmpty)
        #expect(Self.checks(second) == [400], "the interval's end")
        #expect(Self.sharedLists(world.start("c", at: 1_200)).isEmpty)
        // A timer ahead of the clock is asked to come again; one replaced by another does nothing.
        let token = world.pending.last?.token ?? 0
        #expect(Self.checks(world.engine.typingListDue("big", token: token, monotonicNow: 1_300)) == [200])
        #expect(world.engine.typingListDue("big", token: token &- 1, monotonicNow: 1_500).isEmpty)
        let due = world.fire(upTo: 1_500)
        #expect(Self.sharedLists(due).map(\.ids) == [["a", "b", "c"]])
        #expect(Self.sharedLists(due).map(\.count) == [3])
        // A renewal changes nothing, and goes out as nothing.
        #expect(Self.sharedLists(world.start("a", at: 3_600)).isEmpty)
    }

    @Test("a stop, a message and staleness take typists off the list; an empty list goes out too")
    func typistsLeaveTheList() {
        var world = World()
        _ = world.start("a", at: 0)
        _ = world.start("b", at: 600)
        #expect(Self.sharedLists(world.stop("b", at: 1_200)).map(\.ids) == [["a"]])
        let message = Message(id: "m1", channelID: "big", seq: 1, senderID: "a", text: "hi", createdAt: 5)
        let sent = world.note(world.engine.typingEndedBySend(message, in: Self.big, excluding: nil, monotonicNow: 1_300), at: 1_300)
        #expect(Self.sharedLists(sent).isEmpty, "within the interval")
        #expect(Self.sharedLists(world.fire(upTo: 1_700)).map(\.ids) == [[]])
        // A relayed typist whose node never sends the stop is dropped once stale.
        let relayed = world.note(world.engine.typingRelayed(TypingRelay(node: "n2", started: true, channelID: "big", userID: "d"),
                                                            monotonicNow: 5_000), at: 5_000)
        #expect(Self.sharedLists(relayed).map(\.ids) == [["d"]])
        #expect(!relayed.contains { if case .relayTyping = $0 { true } else { false } }, "a relay is not relayed again")
        #expect(Self.sharedLists(world.fire(upTo: 5_000 + TypingSummaries.staleAfter - 1)).isEmpty)
        #expect(Self.sharedLists(world.fire(upTo: 5_000 + TypingSummaries.staleAfter)).map(\.ids) == [[]])
        #expect(world.fire(upTo: 60_000).isEmpty && world.pending.isEmpty, "a quiet channel schedules nothing")
    }

    @Test("everyone typing: a member gets at most two lists per half second")
    func boundedFramesPerMember() {
        var world = World()
        var lists = 0
        for now in stride(from: Milliseconds(0), to: 10_000, by: 50) {
            let typist = ["a", "b", "c", "d", "e"][Int(now / 50) % 5]
            lists += Self.sharedLists(world.start(typist, at: now) + world.stop(typist, at: now + 25)).count
        }
        #expect(lists <= 2 * 10_000 / Int(TypingSummaries.interval), "\(lists) lists in 10 s")
        #expect(lists >= 10, "the list still moves")
    }

    @Test("channels at or under the threshold keep each typist's typing.start and typing.stop")
    func smallChannelsKeepTheirEvents() {
        var engine = Self.engine(channel: Self.small)
        let effects = Self.start(&engine, "a", at: 0, in: "small")
        #expect(Self.sharedLists(effects).isEmpty)
        #expect(effects.contains { if case .publishMessage = $0 { true } else { false } })
    }

    @Test("blocks: strict mode leaves the other out of both lists; standard mode only on hideBlocked connections")
    func blockedTypistsAreLeftOut() {
        for mode in [DeliveryPolicy.Mode.standard, .strict] {
            var world = World(mode: mode)
            world.engine.directory.blocks.block("a", "b")
            _ = world.engine.openSession(SessionRequest(id: 1, user: "a"), now: 1)
            _ = world.engine.openSession(SessionRequest(id: 2, user: "a", hideBlocked: true), now: 1)
            _ = world.engine.openSession(SessionRequest(id: 3, user: "b"), now: 1)
            _ = world.engine.openSession(SessionRequest(id: 4, user: "c"), now: 1)
            var effects = world.start("b", at: 0)
            effects += world.start("c", at: 10)
            effects += world.fire(upTo: 500)
            let shared = Self.sharedLists(effects).last
            #expect(shared?.ids == ["b", "c"], "\(mode): everyone else hears both")
            let perSession = Self.sessionLists(effects)
            #expect(perSession[2] == ["c"], "\(mode): the blocker's hideBlocked connection")
            #expect(perSession[1] == (mode == .strict ? ["c"] : ["b", "c"]), "\(mode): the blocker's plain connection")
            #expect(perSession[3] == ["b", "c"], "\(mode): the blocked user hears c and himself")
            #expect(perSession[4] == nil, "\(mode): c is blocked with nobody and takes the shared list")
        }
    }

    @Test("a shadow-banned typist is listed for himself only; a muted one not for his muter")
    func shadowBanAndMute() {
        var world = World()
        var channel = Self.big
        channel.bans["b"] = Ban(shadow: true)
        world.engine.directory.install(channel)
        world.engine.directory.upsert(User(id: "c", createdAt: 1, mutedUsers: ["d"]))
        for (id, user) in [(1, "a"), (2, "b"), (3, "c")] as [(SessionID, UserID)] {
            _ = world.engine.openSession(SessionRequest(id: id, user: user), now: 1)
        }
        var effects = world.start("b", at: 0)
        effects += world.start("d", at: 10)
        effects += world.fire(upTo: 500)
        #expect(Self.sharedLists(effects).last?.ids == ["d"], "nobody else hears the shadow-banned typist")
        let perSession = Self.sessionLists(effects)
        #expect(perSession[2] == ["b", "d"], "he sees himself typing, as before his ban")
        #expect(perSession[3] == nil, "c muted d: her list stays empty, so she gets none")
        #expect(perSession[1] == nil)
    }

    @Test("strict mode: while only the blocked user types, the blocker gets no list at all (not even an empty one)")
    func aListThatDidNotChangeForAConnectionIsNotSent() {
        var world = World(mode: .strict)
        world.engine.directory.blocks.block("a", "b")
        _ = world.engine.openSession(SessionRequest(id: 1, user: "a"), now: 1)
        var effects = world.start("b", at: 0)
        effects += world.stop("b", at: 100)
        effects += world.fire(upTo: 500)
        #expect(Self.sharedLists(effects).map(\.ids) == [["b"], []], "the others see b come and go")
        #expect(Self.sessionLists(effects)[1] == nil, "a never hears of it")
        #expect(Self.sessionLists(world.start("c", at: 1_000))[1] == ["c"], "c typing reaches a")
    }
}
