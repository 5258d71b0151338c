import Testing
@testable import ChatCore

/// A sender's sends are rated, stored and answered in the order they arrived, whatever
/// each waits for: `clientMessageId` lookups answered in any order, the shared rate.
@Suite("ChatEngine send order")
struct ChatEngineSendOrderTests {
    private static func engine(_ settings: ChatEngine.Settings = ChatEngine.Settings()) -> (ChatEngine, ChannelID) {
        var directory = ChatDirectory()
        for user in ["s", "r"] { directory.upsert(User(id: user, createdAt: 1)) }
        var engine = ChatEngine(directory: directory, settings: settings)
        _ = engine.settle(engine.changeChannel(.create(type: .group, userIDs: ["r"], name: nil, distinct: false, pushFromBlockedUsers: nil),
                                               by: "s", for: .admin(1), now: 1), .committed(.done))
        return (engine, engine.directory.channelIDs(of: "s").first ?? "")
    }

    private static func texts(_ effects: [EngineEffect]) -> [String] {
        effects.persisted.compactMap { if case .insertMessage(let m) = $0.write { return m.text } else { return nil } }
    }

    private static func requester(_ index: Int) -> Requester { .session(1, requestID: .number("\(index)")) }

    @Test("lookups answered in any order: stored in arrival order; untagged sends wait behind a tagged one",
          arguments: [[5, 2, 0, 3, 1, 4], [0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [1, 0, 3, 2, 5, 4]])
    func lookupsInAnyOrder(answerOrder: [Int]) {
        var (engine, channel) = Self.engine()
        var lookups: [Int: WriteID] = [:]
        var stored: [String] = []
        for index in 0..<6 {
            // Sends 1 and 4 carry no clientMessageId.
            let tagged = index != 1 && index != 4
            let effects = engine.sendMessage(channel, text: "m\(index)", dataJSON: nil, clientMessageID: tagged ? "c\(index)" : nil,
                                             from: "s", device: nil, for: Self.requester(index), now: 10, monotonicNow: 10)
            if case .lookUpClientMessage(let lookup, _, _)? = effects.first { lookups[index] = lookup }
            stored += Self.texts(effects)
        }
        #expect(stored.isEmpty, "nothing is stored before the first lookup answers")
        for index in answerOrder {
            guard let lookup = lookups[index] else { continue }
            stored += Self.texts(engine.clientMessageLookedUp(lookup, .notFound, now: 11, monotonicNow: 11))
        }
        #expect(stored == (0..<6).map { "m\($0)" })
        #expect(engine.pendingSends.count == 0)
    }

    @Test("a found retry and a failed lookup are answered in their turn, between stored sends")
    func answeredInTurn() {
        var (engine, channel) = Self.engine()
        var lookups: [WriteID] = []
        for index in 0..<4 {
            let effects = engine.sendMessage(channel, text: "m\(index)", dataJSON: nil, clientMessageID: "c\(index)", from: "s",
                                             device: nil, for: Self.requester(index), now: 10, monotonicNow: 10)
            guard case .lookUpClientMessage(let lookup, _, _)? = effects.first else { Issue.record("no lookup"); return }
            lookups.append(lookup)
        }
        let earlier = Message(id: "m_old", channelID: channel, seq: 1, senderID: "s", text: "m1", createdAt: 5)
        var effects = engine.clientMessageLookedUp(lookups[3], .notFound, now: 11, monotonicNow: 11)
        effects += engine.clientMessageLookedUp(lookups[2], .failed, now: 11, monotonicNow: 11)
        effects += engine.clientMessageLookedUp(lookups[1], .found(earlier), now: 11, monotonicNow: 11)
        #expect(effects.isEmpty, "all wait for the first")
        effects = engine.clientMessageLookedUp(lookups[0], .notFound, now: 11, monotonicNow: 11)
        // In order: m0 stored, m1's stored copy answered, m2 ERR_INTERNAL, m3 stored.
        let order: [String] = effects.compactMap { effect in
            switch effect {
            case .persist(_, .insertMessage(let m)): return "store \(m.text)"
            case .reply(_, .result): return "found"
            case .reply(_, .failure(let e)): return "\(e.code)"
            default: return nil
            }
        }
        #expect(order == ["store m0", "found", "\(ErrorCode.internalError)", "store m3"])
    }

    @Test("past the burst the last sends of a pipelined burst are refused, not arbitrary ones")
    func rateRefusesTheLast() {
        var (engine, channel) = Self.engine(ChatEngine.Settings(userMessagesPerSecond: 5, userMessageBurst: 5))
        var lookups: [WriteID] = []
        for index in 0..<8 {
            let effects = engine.sendMessage(channel, text: "m\(index)", dataJSON: nil, clientMessageID: "c\(index)", from: "s",
                                             device: nil, for: Self.requester(index), now: 10, monotonicNow: 10)
            if case .lookUpClientMessage(let lookup, _, _)? = effects.first { lookups.append(lookup) }
        }
        var effects: [EngineEffect] = []
        for lookup in lookups.reversed() { effects += engine.clientMessageLookedUp(lookup, .notFound, now: 11, monotonicNow: 11) }
        #expect(Self.texts(effects) == (0..<5).map { "m\($0)" })
        #expect(effects.replies.map(\.to) == (5..<8).map { Self.requester($0) })
        #expect(effects.replies.allSatisfy { $0.reply.errorCode == .rateLimited })
    }

    @Test("shared rate: asked in arrival order once the lookups before have answered; stored in order whatever order it answers")
    func sharedRateInOrder() {
        var (engine, channel) = Self.engine(ChatEngine.Settings(userMessagesPerSecond: 5, userMessageBurst: 5, sharedUserRate: true))
        var lookups: [WriteID] = []
        var asked: [EngineEffect] = []
        for index in 0..<4 {
            let effects = engine.sendMessage(channel, text: "m\(index)", dataJSON: nil, clientMessageID: index == 2 ? nil : "c\(index)",
                                             from: "s", device: nil, for: Self.requester(index), now: 10, monotonicNow: 10)
            if case .lookUpClientMessage(let lookup, _, _)? = effects.first { lookups.append(lookup) }
            asked += effects.filter { if case .takeRate = $0 { return true } else { return false } }
        }
        #expect(asked.isEmpty, "no rate is asked while an earlier lookup is open")
        asked += engine.clientMessageLookedUp(lookups[1], .notFound, now: 11, monotonicNow: 11)
        #expect(asked.isEmpty)
        asked += engine.clientMessageLookedUp(lookups[0], .notFound, now: 11, monotonicNow: 11)
        let checks = asked.compactMap { if case .takeRate(let check, _, _, _, _, _) = $0 { return check } else { return nil } }
        #expect(checks.count == 3, "m0, m1 and the untagged m2 are asked; m3 is still looked up")
        var stored: [String] = []
        stored += Self.texts(engine.rateTaken(checks[2], .admitted, now: 12, monotonicNow: 12))
        stored += Self.texts(engine.rateTaken(checks[1], .admitted, now: 12, monotonicNow: 12))
        #expect(stored.isEmpty)
        let later = engine.clientMessageLookedUp(lookups[2], .notFound, now: 12, monotonicNow: 12)
        let lastCheck = later.compactMap { if case .takeRate(let check, _, _, _, _, _) = $0 { return check } else { return nil } }
        #expect(lastCheck.count == 1)
        stored += Self.texts(engine.rateTaken(checks[0], .admitted, now: 12, monotonicNow: 12))
        #expect(stored == ["m0", "m1", "m2"])
        stored += Self.texts(engine.rateTaken(lastCheck[0], nil, now: 12, monotonicNow: 12))
        #expect(stored == ["m0", "m1", "m2", "m3"])
    }

    @Test("a send that waited is refused if its sender left the channel meanwhile")
    func leftWhileWaiting() {
        var (engine, channel) = Self.engine()
        let first = engine.sendMessage(channel, text: "m0", dataJSON: nil, clientMessageID: "c0", from: "s", device: nil,
                                       for: Self.requester(0), now: 10, monotonicNow: 10)
        #expect(engine.sendMessage(channel, text: "m1", dataJSON: nil, clientMessageID: nil, from: "s", device: nil,
                                   for: Self.requester(1), now: 10, monotonicNow: 10).isEmpty)
        _ = engine.settle(engine.changeChannel(.leave(channel), by: "s", for: .admin(2), now: 11), .committed(.done))
        guard case .lookUpClientMessage(let lookup, _, _)? = first.first else { Issue.record("no lookup"); return }
        let effects = engine.clientMessageLookedUp(lookup, .notFound, now: 12, monotonicNow: 12)
        #expect(effects.persisted.isEmpty)
        #expect(effects.replies.count == 2 && effects.replies.allSatisfy { $0.reply.errorCode != nil })
    }
}
