import Testing
@testable import ChatCore

/// PROTOCOL.md §14 typing in the engine: forwarded at most once every 2 s per user and
/// channel (every request still answered `{}`), ended by `typing.stop`, by 10 s without a
/// new `typing.start`, or by a message (then `typing.stop` goes out); never stored.
@Suite("ChatEngine typing")
struct ChatEngineTypingTests {
    private static let group = Channel(id: "g", type: .group, name: "g", members: ["a", "b"], createdAt: 1, createdBy: "a")

    private static func engine() -> ChatEngine {
        var engine = makeEngine(users: ["a", "b", "c"])
        engine.directory.install(group)
        return engine
    }

    private static func events(_ effects: [EngineEffect]) -> [String] {
        effects.compactMap { effect -> String? in
            guard case .publishMessage(_, let payload, _, _) = effect else { return nil }
            let text = String(decoding: payload, as: UTF8.self)
            return text.contains("typing.start") ? "start" : text.contains("typing.stop") ? "stop" : "other"
        }
    }

    private static let requester = Requester.session(1, requestID: .number("1"))

    @Test func forwardedAtMostOnceEveryTwoSecondsAndAlwaysAnswered() {
        var engine = Self.engine()
        for (now, forwarded) in [(0, true), (500, false), (1_999, false), (2_000, true), (2_100, false)] as [(Int64, Bool)] {
            let effects = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: now)
            #expect(Self.events(effects) == (forwarded ? ["start"] : []), "at \(now)")
            #expect(effects.replies.count == 1)
            #expect(effects.contains(EngineEffect.checkTypingLater("g", user: "a", afterMilliseconds: 10_000)))
        }
        #expect(engine.writesInFlight == 0, "nothing is stored")
    }

    @Test("typing.stop does not reset the interval: start/stop alternating at 45 a second for 3 s forwards two starts and two stops")
    func stopDoesNotResetTheInterval() {
        var engine = Self.engine()
        var forwarded: [String] = []
        var now: Int64 = 0
        var answered = 0
        while now < 3_000 {
            let start = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: now)
            let stop = engine.typingStop("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)
            forwarded += Self.events(start) + Self.events(stop)
            answered += start.replies.count + stop.replies.count
            now += 44
        }
        #expect(forwarded == ["start", "stop", "start", "stop"])
        #expect(answered == 2 * 69, "every request is answered")
        // A start held back after a stop is announced when the interval ends, if still typing then.
        _ = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 4_100)
        #expect(Self.events(engine.typingStop("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)) == ["stop"])
        let held = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 4_200)
        #expect(Self.events(held).isEmpty)
        #expect(held.contains(EngineEffect.checkTypingLater("g", user: "a", afterMilliseconds: 1_900)))
        #expect(Self.events(engine.typingDue("g", user: "a", monotonicNow: 6_100)) == ["start"])
        #expect(Self.events(engine.typingDue("g", user: "a", monotonicNow: 14_200)) == ["stop"], "announced, so it ends with a stop")
        // One stopped before its announcement ends silently.
        _ = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 15_000)
        _ = engine.typingStop("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)
        let silent = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 15_100)
        #expect(Self.events(silent).isEmpty)
        #expect(Self.events(engine.typingStop("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)).isEmpty)
        #expect(engine.typingDue("g", user: "a", monotonicNow: 17_000).isEmpty)
    }

    @Test func endsWithStopWithTenQuietSecondsOrWithAMessage() {
        var engine = Self.engine()
        _ = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)
        #expect(Self.events(engine.typingStop("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)) == ["stop"])
        #expect(Self.events(engine.typingStop("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)).isEmpty, "not typing any more")

        _ = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 1_000)
        _ = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 5_000)
        #expect(engine.typingDue("g", user: "a", monotonicNow: 11_000).isEmpty, "renewed at 5 s: lasts until 15 s")
        #expect(Self.events(engine.typingDue("g", user: "a", monotonicNow: 15_000)) == ["stop"])

        _ = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 20_000)
        let message = Message(id: "m1", channelID: "g", seq: 1, senderID: "a", text: "hi", createdAt: 5)
        let effects = engine.typingEndedBySend(message, in: Self.group, excluding: 1, monotonicNow: 20_000)
        #expect(Self.events(effects) == ["stop"])
        #expect(engine.typingDue("g", user: "a", monotonicNow: 40_000).isEmpty)
    }

    @Test func whatIsForwardedIsRelayedAndARelayIsFannedOutWithoutRelayingAgain() throws {
        var engine = Self.engine()
        let started = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 0)
        #expect(started.contains(EngineEffect.relayTyping(started: true, "g", user: "a")))
        let held = engine.typingStart("g", from: "a", session: 1, for: Self.requester, monotonicNow: 100)
        #expect(!held.contains { if case .relayTyping = $0 { true } else { false } }, "not forwarded: not relayed")
        let relay = try #require(TypingRelay.decode(TypingRelay(node: "n2", started: false, channelID: "g", userID: "b").encoded()))
        #expect(relay == TypingRelay(node: "n2", started: false, channelID: "g", userID: "b"))
        let relayed = engine.typingRelayed(relay, monotonicNow: 0)
        #expect(Self.events(relayed) == ["stop"])
        #expect(!relayed.contains { if case .relayTyping = $0 { true } else { false } })
    }

    @Test func onlyMembersMayType() {
        var engine = Self.engine()
        let effects = engine.typingStart("g", from: "c", session: 3, for: Self.requester, monotonicNow: 0)
        #expect(Self.events(effects).isEmpty)
        guard case .failure(let error)? = effects.replies.first?.reply else {
            Issue.record("no error: \(effects)")
            return
        }
        #expect(error.code == ErrorCode.channelNotFound)
    }
}
