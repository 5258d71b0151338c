import Testing
@testable import ChatCore

/// `message.send` through the engine alone: the §5 cells as effects (what is stored hidden,
/// who the fan-out must check, who gets a push, whose channel list moves), one encoding for
/// the `ok` and `message.new`, retries by `clientMessageId`, and failed writes.
@Suite("ChatEngine messages")
struct ChatEngineMessageTests {
    static let sender = Requester.session(1, requestID: .number("1"))

    enum Relation: CaseIterable {
        case none, recipientBlockedSender, senderBlockedRecipient, both

        var policy: DeliveryPolicy.Relation {
            DeliveryPolicy.Relation(recipientBlockedSender: self == .recipientBlockedSender || self == .both,
                                    senderBlockedRecipient: self == .senderBlockedRecipient || self == .both)
        }
    }

    /// An engine with sender `s` and recipient `r` (offline) in a channel of `kind`, blocked as `relation` says.
    static func setUp(_ kind: DeliveryPolicy.ChannelKind, _ mode: DeliveryPolicy.Mode, _ relation: Relation)
        -> (engine: ChatEngine, channel: ChannelID)
    {
        var directory = ChatDirectory()
        for user in ["s", "r", "t"] { directory.upsert(User(id: user, createdAt: 1)) }
        var engine = ChatEngine(directory: directory, settings: ChatEngine.Settings(blockingMode: mode))
        let members = kind == .group ? ["r", "t"] : ["r"]
        let type: ChannelType = kind == .open ? .open : .group
        let create = engine.changeChannel(.create(type: type, userIDs: type == .open ? [] : members, name: nil, distinct: kind == .oneToOne,
                                                  pushFromBlockedUsers: nil), by: "s", for: sender, now: 1)
        _ = engine.settle(create, .committed(.done))
        let channel = engine.directory.channelIDs(of: "s").first ?? ""
        if kind == .open { _ = engine.settle(engine.changeChannel(.join(channel), by: "r", for: .session(2, requestID: .null), now: 2), .committed(.done)) }
        if relation.policy.recipientBlockedSender {
            _ = engine.settle(engine.setBlocks(["s"], blocked: true, by: "r", for: .admin(1), now: 3), .committed(.done))
        }
        if relation.policy.senderBlockedRecipient {
            _ = engine.settle(engine.setBlocks(["r"], blocked: true, by: "s", for: .admin(2), now: 3), .committed(.done))
        }
        return (engine, channel)
    }

    @Test("every §5 cell: stored hidden, checked in the fan-out, pushed, moving the channel list", arguments:
          DeliveryPolicy.ChannelKind.allCases, DeliveryPolicy.Mode.allCases)
    func fivecells(kind: DeliveryPolicy.ChannelKind, mode: DeliveryPolicy.Mode) {
        for relation in Relation.allCases {
            var (engine, channel) = Self.setUp(kind, mode, relation)
            #expect(engine.directory.channels[channel].map { $0.kind } == kind, "set-up made the wrong kind of channel")
            let send = engine.sendMessage(channel, text: "hi", dataJSON: nil, clientMessageID: nil, from: "s", device: nil,
                                          for: Self.sender, now: 10, monotonicNow: 10)
            guard case .insertMessage(let draft)? = send.persisted.first?.write else {
                Issue.record("\(kind) \(mode) \(relation): nothing stored")
                continue
            }
            let hidden = kind == .oneToOne && DeliveryPolicy.hiddenForever(kind: kind, mode: mode, relation: relation.policy)
            #expect((draft.hiddenFrom == "r") == hidden, "\(kind) \(mode) \(relation): hiddenFrom")
            var stored = draft
            stored.seq = 1
            let done = engine.committed(send.persisted[0].id, .committed(.message(stored)), monotonicNow: 10)
            let origin = done.compactMap { effect -> MessageOrigin? in
                if case .publishMessage(_, _, let origin, _) = effect { return origin } else { return nil }
            }.first
            let r = engine.number(for: "r")
            if kind == .open || !hidden {
                #expect(origin != nil, "\(kind) \(mode) \(relation): no message.new")
            }
            if let origin {
                #expect((origin.related?.contains(r) ?? false) == (relation != .none), "\(kind) \(mode) \(relation): fan-out check")
                #expect((origin.hiddenFrom == r) == hidden)
                #expect(origin.kind == kind && origin.mode == mode)
            }
            let pushed = done.contains { if case .push(let events) = $0 { return events.contains { $0.userID == "r" } } else { return false } }
            let pushes = kind != .open && !hidden
                && DeliveryPolicy.pushes(kind: kind, mode: mode, relation: relation.policy, pushFromBlockedUsers: false)
            #expect(pushed == pushes, "\(kind) \(mode) \(relation): push")
            let moves = DeliveryPolicy.movesChannelList(kind: kind, mode: mode, relation: relation.policy)
            #expect((engine.directory.lastMessage(of: channel, for: "r")?.id == stored.id) == moves,
                    "\(kind) \(mode) \(relation): channel list")
        }
    }

    @Test("the ok and message.new carry the same bytes of the message, and nothing is applied before the commit")
    func encodedOnce() {
        var (engine, channel) = Self.setUp(.group, .standard, .none)
        let send = engine.sendMessage(channel, text: "hello", dataJSON: #"{"k":1}"#, clientMessageID: nil, from: "s", device: nil,
                                      for: Self.sender, now: 10, monotonicNow: 10)
        #expect(engine.directory.newestMessage(of: channel) == nil)
        guard case .insertMessage(var stored)? = send.persisted.first?.write else { return }
        stored.seq = 1
        let done = engine.committed(send.persisted[0].id, .committed(.message(stored)), monotonicNow: 10)
        guard case .result(let json)? = done.replies.first?.reply,
              case .publishMessage(_, let payload, _, let excluding)? = done.first(where: {
                  if case .publishMessage = $0 { return true } else { return false } }) else {
            Issue.record("no reply or no message.new")
            return
        }
        #expect(excluding == 1)
        let event = String(decoding: payload, as: UTF8.self)
        #expect(event == #"{"type":"event","event":"message.new","data":"# + String(decoding: json, as: UTF8.self) + "}")
        #expect(parseJSON(json)?["data"]?["k"] != nil)
        #expect(engine.directory.newestMessage(of: channel)?.id == stored.id)
        #expect(engine.counters.stored == 1 && engine.counters.received == 1)
    }

    @Test("a failed write answers ERR_INTERNAL, records nothing, and the retry by clientMessageId stores it once")
    func failedSendRetried() {
        var (engine, channel) = Self.setUp(.group, .standard, .none)
        let first = engine.sendMessage(channel, text: "x", dataJSON: nil, clientMessageID: "c1", from: "s", device: nil,
                                       for: Self.sender, now: 10, monotonicNow: 10)
        guard case .lookUpClientMessage(let lookup, "s", "c1")? = first.first else {
            Issue.record("a clientMessageId send was not looked up first")
            return
        }
        // A retry while the first is in flight waits for it.
        let waiting = engine.sendMessage(channel, text: "x", dataJSON: nil, clientMessageID: "c1", from: "s", device: nil,
                                         for: .session(1, requestID: .number("2")), now: 11, monotonicNow: 11)
        #expect(waiting.isEmpty)
        let write = engine.clientMessageLookedUp(lookup, .notFound, now: 12, monotonicNow: 12)
        #expect(write.persisted.count == 1)
        let failed = engine.settle(write, .failed)
        #expect(failed.replies.count == 2 && failed.replies.allSatisfy { $0.reply.errorCode == .internalError })
        #expect(engine.directory.newestMessage(of: channel) == nil && engine.counters.stored == 0)
        #expect(engine.clientMessagesInFlight == 0)
        // The client retries: looked up again (not found: the failed write stored nothing), stored once.
        let retry = engine.sendMessage(channel, text: "x", dataJSON: nil, clientMessageID: "c1", from: "s", device: nil,
                                       for: Self.sender, now: 20, monotonicNow: 20)
        guard case .lookUpClientMessage(let again, _, _)? = retry.first else { return }
        let stored = engine.clientMessageLookedUp(again, .notFound, now: 21, monotonicNow: 21)
        guard case .insertMessage(var message)? = stored.persisted.first?.write else { return }
        message.seq = 1
        _ = engine.committed(stored.persisted[0].id, .committed(.message(message)))
        // A later retry is answered from the store, with no second write and no rate spent.
        let late = engine.sendMessage(channel, text: "x", dataJSON: nil, clientMessageID: "c1", from: "s", device: nil,
                                      for: Self.sender, now: 30, monotonicNow: 30)
        guard case .lookUpClientMessage(let last, _, _)? = late.first else { return }
        let answered = engine.clientMessageLookedUp(last, .found(message), now: 31, monotonicNow: 31)
        #expect(answered.persisted.isEmpty && answered.replies.first?.reply.json?["id"]?.stringValue == message.id)
    }

    @Test("the per-user rate: past the burst ERR_RATE_LIMITED with retryAfterMs, one log line per streak, nothing stored")
    func rateLimited() {
        var directory = ChatDirectory()
        for user in ["s", "r"] { directory.upsert(User(id: user, createdAt: 1)) }
        var engine = ChatEngine(directory: directory, settings: ChatEngine.Settings(userMessagesPerSecond: 5, userMessageBurst: 2))
        _ = engine.settle(engine.changeChannel(.create(type: .group, userIDs: ["r"], name: nil, distinct: false, pushFromBlockedUsers: nil),
                                               by: "s", for: Self.sender, now: 1), .committed(.done))
        let channel = engine.directory.channelIDs(of: "s").first ?? ""
        var outcomes: [[EngineEffect]] = []
        for index in 0..<4 {
            outcomes.append(engine.sendMessage(channel, text: "m\(index)", dataJSON: nil, clientMessageID: nil, from: "s", device: "d",
                                               for: Self.sender, now: 100, monotonicNow: 100))
        }
        #expect(outcomes.map(\.persisted.count) == [1, 1, 0, 0])
        #expect(outcomes[2].replies.first?.reply.errorCode == .rateLimited)
        let logs = outcomes.flatMap { $0 }.filter { if case .log(.notice, "message.rate_limited", _, _) = $0 { return true } else { return false } }
        #expect(logs.count == 1)
        // The line names the requesting session (the driver adds its connection) and keeps the wait a number.
        if case .log(_, _, let fields, let session)? = logs.first {
            #expect(session == Self.sender.session && session != nil)
            #expect(fields["user"] == .text("s") && fields["device"] == .text("d"))
            if case .number(let wait)? = fields["retryAfterMs"] { #expect(wait > 0) } else { Issue.record("retryAfterMs \(String(describing: fields["retryAfterMs"]))") }
        }
        #expect(engine.counters.rateLimited == 2)
    }

    @Test("a shared rate (cluster): the send asks takeRate; limited answers ERR_RATE_LIMITED with its wait, admitted stores, no answer falls back to this node's limiter")
    func sharedRate() {
        var directory = ChatDirectory()
        for user in ["s", "r"] { directory.upsert(User(id: user, createdAt: 1)) }
        var engine = ChatEngine(directory: directory, settings: ChatEngine.Settings(userMessagesPerSecond: 5, userMessageBurst: 1,
                                                                                    sharedUserRate: true))
        _ = engine.settle(engine.changeChannel(.create(type: .group, userIDs: ["r"], name: nil, distinct: false, pushFromBlockedUsers: nil),
                                               by: "s", for: Self.sender, now: 1), .committed(.done))
        let channel = engine.directory.channelIDs(of: "s").first ?? ""
        func send() -> WriteID? {
            let asked = engine.sendMessage(channel, text: "m", dataJSON: nil, clientMessageID: nil, from: "s", device: nil,
                                           for: Self.sender, now: 1_000, monotonicNow: 7)
            guard case .takeRate(let check, "s", 5, 1, 1_000, nil)? = asked.first, asked.count == 1 else {
                Issue.record("no takeRate: \(asked)")
                return nil
            }
            return check
        }
        guard let first = send(), let second = send(), let third = send(), let fourth = send() else { return }
        let limited = engine.rateTaken(first, .limited(retryAfterMs: 123), now: 1_000, monotonicNow: 7)
        #expect(limited.persisted.isEmpty)
        #expect(limited.replies.first?.reply.errorCode == .rateLimited)
        if case .failure(let error)? = limited.replies.first?.reply { #expect(error.retryAfterMs == 123) }
        #expect(engine.rateTaken(second, .admitted, now: 1_000, monotonicNow: 7).persisted.count == 1)
        // Redis could not answer: this node's own bucket (burst 1) decides, once, then limits.
        #expect(engine.rateTaken(third, nil, now: 1_000, monotonicNow: 7).persisted.count == 1)
        #expect(engine.rateTaken(fourth, nil, now: 1_000, monotonicNow: 7).replies.first?.reply.errorCode == .rateLimited)
        #expect(engine.rateTaken(fourth, .admitted, now: 1_000, monotonicNow: 7).isEmpty, "answered once")
    }

    @Test("message.history: a batch a block filters short is read on; a failed read answers ERR_INTERNAL")
    func historyThroughReads() {
        var (engine, channel) = Self.setUp(.group, .standard, .recipientBlockedSender)
        func message(_ seq: Int64, from sender: UserID) -> Message {
            Message(id: "m\(seq)", channelID: channel, seq: seq, senderID: sender, text: "t", createdAt: seq)
        }
        // r blocked s and hides blocked senders: s's messages do not count toward the page.
        let asked = engine.readHistory(channel, beforeSeq: nil, afterSeq: 0, limit: 2, cursor: nil, by: "r", hideBlocked: true,
                                       for: .session(2, requestID: .number("9")))
        guard case .readHistory(let first, _, "r", nil, 0, 2, _)? = asked.first else {
            Issue.record("no read: \(asked)")
            return
        }
        let more = engine.historyRead(first, [message(1, from: "s"), message(2, from: "t")])
        guard case .readHistory(let second, _, _, nil, 2, 2, _)? = more.first else {
            Issue.record("the short page was not read on from seq 2: \(more)")
            return
        }
        let complete = engine.historyRead(second, [message(3, from: "t")])
        // The page's counts need r's own reactions and those of s, whom r's connection cuts.
        guard case .readAttributions(let attributions, _, 2...3, ["r", "s"], "r")? = complete.first else {
            Issue.record("the page's attributions were not read: \(complete)")
            return
        }
        let done = engine.attributionsRead(attributions, MessageAttributions())
        let seqs = done.replies.first?.reply.json?["messages"]?.arrayValue?.compactMap { $0["seq"]?.int64Value }
        #expect(seqs == [2, 3])
        #expect(done.replies.first?.reply.json?["next"] == .null)
        let again = engine.readHistory(channel, beforeSeq: nil, afterSeq: nil, limit: 5, cursor: nil, by: "r", hideBlocked: false,
                                       for: .session(2, requestID: .number("10")))
        guard case .readHistory(let failing, _, _, _, _, _, _)? = again.first else { return }
        #expect(engine.historyRead(failing, nil).replies.first?.reply.errorCode == .internalError)
        #expect(engine.readHistory(channel, beforeSeq: nil, afterSeq: nil, limit: 5, cursor: nil, by: "nobody", hideBlocked: false,
                                   for: .admin(1)).replies.first?.reply.errorCode == .channelNotFound)
    }
}

