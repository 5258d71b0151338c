import Testing
@testable import ChatCore

/// DESIGN "order of commit and publish": two nodes may put one channel's messages on the
/// bus out of `seq` order, and a node may miss some (its first node died before publishing,
/// a bus outage). Every node fans a channel's messages out in `seq` order: a message ahead
/// of a missing one is held, the gap is read from the store after a short bound, and what
/// a node already has is dropped by its seq.
@Suite("ChatEngine seq order")
struct ChatEngineOrderTests {
    private static let group = Channel(id: "g", type: .group, name: "g", members: ["a", "b"], createdAt: 1, createdBy: "a")

    private static func message(_ seq: Int64) -> Message {
        Message(id: "m\(seq)", channelID: "g", seq: seq, senderID: "a", text: "t\(seq)", createdAt: 5 + seq)
    }

    private static func arrive(_ engine: inout ChatEngine, _ seq: Int64, retry: Bool = false) -> [EngineEffect] {
        let message = message(seq)
        return engine.replicated(BusEvent(node: "other", number: UInt64(seq), write: .insertMessage(message),
                                          result: retry ? .existingMessage(message) : .message(message)), monotonicNow: 0)
    }

    private static func engine() -> ChatEngine {
        var engine = makeEngine(users: ["a", "b"])
        _ = engine.replicated(BusEvent(node: "other", number: 0, write: .createChannel(group), result: .done), monotonicNow: 0)
        return engine
    }

    /// The seqs of the `message.new` fanned out, in order.
    private static func fannedOut(_ effects: [EngineEffect]) -> [Int64] {
        effects.compactMap { effect -> Int64? in
            guard case .publishMessage(_, let payload, _, _) = effect else { return nil }
            let text = String(decoding: payload, as: UTF8.self)
            guard let after = text.split(separator: #""seq":"#, maxSplits: 1).dropFirst().first else { return nil }
            return Int64(after.prefix { $0.isNumber })
        }
    }

    @Test func messagesOutOfOrderAreFannedOutInOrder() {
        var engine = Self.engine()
        #expect(Self.fannedOut(Self.arrive(&engine, 1)) == [1])
        let ahead = Self.arrive(&engine, 3)
        #expect(Self.fannedOut(ahead).isEmpty)
        #expect(ahead.contains(.checkGapLater("g", afterSeq: 1)))
        #expect(Self.fannedOut(Self.arrive(&engine, 2)) == [2, 3])
        #expect(engine.directory.newestMessage(of: "g")?.seq == 3)
        #expect(engine.gapDue("g", afterSeq: 1).isEmpty, "nothing held any more: no read")
    }

    @Test func aMessageAlreadyHereIsDroppedBySeq() {
        var engine = Self.engine()
        _ = Self.arrive(&engine, 1)
        _ = Self.arrive(&engine, 2)
        #expect(Self.fannedOut(Self.arrive(&engine, 2, retry: true)).isEmpty)
        #expect(Self.fannedOut(Self.arrive(&engine, 1)).isEmpty)
    }

    @Test func aRetryPublishedAgainFillsTheGapItsFirstNodeLeft() {
        var engine = Self.engine()
        _ = Self.arrive(&engine, 1)
        // Seq 2 was committed by a node that died before publishing it; its retry comes through another.
        #expect(Self.fannedOut(Self.arrive(&engine, 2, retry: true)) == [2])
    }

    @Test func aGapIsReadFromTheStoreAfterTheBound() throws {
        var engine = Self.engine()
        _ = Self.arrive(&engine, 1)
        _ = Self.arrive(&engine, 4)
        _ = Self.arrive(&engine, 5)
        let due = engine.gapDue("g", afterSeq: 1)
        guard case .readHistory(let read, let channel, let viewer, let before, let after, let limit, _)? = due.first else {
            Issue.record("no read: \(due)")
            return
        }
        #expect(channel == "g" && viewer == "" && before == 4 && after == 1 && limit == 2)
        let filled = engine.historyRead(read, [Self.message(2), Self.message(3)])
        #expect(Self.fannedOut(filled) == [2, 3, 4, 5])
        #expect(!filled.contains { if case .checkGapLater = $0 { true } else { false } })
    }

    @Test func aFailedGapReadSkipsTheGapSoLiveDeliveryGoesOn() {
        var engine = Self.engine()
        _ = Self.arrive(&engine, 1)
        _ = Self.arrive(&engine, 3)
        _ = Self.arrive(&engine, 4)
        _ = Self.arrive(&engine, 6)
        guard case .readHistory(let read, _, _, _, _, _, _)? = engine.gapDue("g", afterSeq: 1).first else {
            Issue.record("no read")
            return
        }
        let skipped = engine.historyRead(read, nil)
        #expect(Self.fannedOut(skipped) == [3, 4])
        #expect(engine.counters.gapsSkipped == 1)
        #expect(skipped.contains(.checkGapLater("g", afterSeq: 4)), "6 still waits for 5")
    }

    @Test func aGapFilledMeanwhileUpToAnotherWaitsForThatOne() {
        var engine = Self.engine()
        _ = Self.arrive(&engine, 1)
        _ = Self.arrive(&engine, 3)
        _ = Self.arrive(&engine, 5)
        _ = Self.arrive(&engine, 2)
        #expect(engine.gapDue("g", afterSeq: 1) == [.checkGapLater("g", afterSeq: 3)])
    }
}
