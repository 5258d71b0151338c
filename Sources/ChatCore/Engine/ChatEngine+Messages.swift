/// What the fan-out of one `message.new` needs for its per-recipient block check (§5).
public struct MessageOrigin: Sendable, Equatable {
    public var sender: UserNumber
    public var hiddenFrom: UserNumber?
    /// Users blocked with the sender either way (from the block graph when the message
    /// committed); nil when there are none, so fan-out skips the check.
    public var related: Set<UserNumber>?
    public var kind: DeliveryPolicy.ChannelKind
    public var mode: DeliveryPolicy.Mode
    /// Recipients who never get it, whatever the blocks (a typing user's muters, §16).
    public var silenced: Set<UserNumber>? = nil
}

/// A sender's `clientMessageId`.
struct ClientMessageKey: Hashable, Sendable {
    var sender: UserID
    var clientMessageID: String
}

/// A `message.send` from its requester.
struct MessageSend: Sendable {
    var channelID: ChannelID
    var sender: UserID
    var device: String?
    var text: String
    var dataJSON: String?
    var clientMessageID: String?
    var requester: Requester
    /// A reply in the thread of this message (§15).
    var parentSeq: Int64? = nil
    var mentionedUserIDs: [UserID] = []
}

/// What the per-message limits of §6 count.
public struct MessageCounters: Sendable, Equatable {
    public var received = 0
    public var stored = 0
    public var rateLimited = 0
    public var openChannelThrottled = 0
    /// Seqs given up on after a failed gap read: their messages were not fanned out live.
    public var gapsSkipped = 0
    /// `channel.markRead` writes committed / failed, and `channel.read` events sent out.
    public var readMarksStored = 0
    public var readMarksFailed = 0
    public var readEvents = 0
    /// `typing.start` / `typing.stop` events this node decided to send (not relays).
    public var typingStarts = 0
    public var typingStops = 0
    /// Presence subscriptions held by this node's connections (a level, not a count of events).
    public var presenceSubscriptions = 0
    /// §15: changes (edits, deletes, reactions) stored by this node, refused by the change
    /// rate, and committed changes whose message could not be read (sent to nobody live).
    public var changesStored = 0
    public var changesRateLimited = 0
    public var changeEventsSkipped = 0

    public init() {}
}

/// The outcome of looking a `clientMessageId` up in the store.
public enum ClientMessageLookup: Sendable, Equatable {
    case found(Message)
    case notFound
    case failed
}

extension ChatEngine {
    /// `message.send` (PROTOCOL.md §4, §6). A send with a `clientMessageId` is looked up in
    /// the store first (`lookUpClientMessage`; answer with `clientMessageLookedUp`): a retry
    /// of a stored message gets that message and spends no rate. The message is stored, and
    /// on commit the sender gets `ok` and the channel `message.new`, both from one encoding
    /// of the message; offline members get push events (§9). A sender's sends are rated,
    /// stored and answered in the order they arrived (`SendsInArrivalOrder`).
    ///
    /// A reply (`parentSeq`, §15) first needs its parent, read into the engine's copy when it
    /// is not there: it must be a message the sender sees that is not itself a reply.
    public mutating func sendMessage(_ channelID: ChannelID, text: String, dataJSON: String?, clientMessageID: String?,
                                     parentSeq: Int64? = nil, mentionedUserIDs: [UserID] = [],
                                     from sender: UserID, device: String?, for requester: Requester,
                                     now: Milliseconds, monotonicNow: Milliseconds) -> [EngineEffect] {
        counters.received += 1
        let send = MessageSend(channelID: channelID, sender: sender, device: device, text: text, dataJSON: dataJSON,
                               clientMessageID: clientMessageID, requester: requester, parentSeq: parentSeq,
                               mentionedUserIDs: mentionedUserIDs)
        do throws(ChatError) {
            _ = try directory.memberChannel(channelID, of: sender)
            if text.count > settings.maxTextLength {
                throw ChatError(.messageTooLong, "text is longer than \(settings.maxTextLength) characters")
            }
        } catch {
            return [.reply(requester, .failure(error))]
        }
        guard let clientMessageID else {
            if parentSeq != nil {
                let ticket = nextWriteID()
                let (stage, loads) = parentStage(of: send, ticket: ticket)
                pendingSends.append(ticket, send, stage)
                return loads + drainSends(of: sender, now: now, monotonicNow: monotonicNow)
            }
            if pendingSends.isEmpty(for: sender) && !asksShared(send) {
                let user = number(for: sender)
                return store(send, rate: userMessageRates?.take(user, now: monotonicNow), now: now)
            }
            pendingSends.append(nextWriteID(), send, .ready)
            return drainSends(of: sender, now: now, monotonicNow: monotonicNow)
        }
        let key = ClientMessageKey(sender: sender, clientMessageID: clientMessageID)
        if clientMessages[key] != nil {
            // The same send is already being looked up or stored: answer with its outcome.
            clientMessages.modifyValue(forKey: key) { $0.append(requester) }
            return []
        }
        clientMessages[key] = []
        let lookup = nextWriteID()
        pendingSends.append(lookup, send, .lookingUp)
        return [.lookUpClientMessage(lookup, sender: sender, clientMessageID: clientMessageID)]
    }

    /// The store's answer to `lookUpClientMessage`.
    public mutating func clientMessageLookedUp(_ lookup: WriteID, _ result: ClientMessageLookup, now: Milliseconds,
                                               monotonicNow: Milliseconds) -> [EngineEffect] {
        var stage: SendsInArrivalOrder.Stage
        var loads: [EngineEffect] = []
        switch result {
        case .found(let stored): stage = .answered(.result(Self.encode(stored)))
        case .notFound: stage = .ready
        case .failed: stage = .answered(.failure(ChatError(.internalError, "storage failed; retry")))
        }
        if case .ready = stage, let send = pendingSends.entry(lookup)?.send, send.parentSeq != nil {
            (stage, loads) = parentStage(of: send, ticket: lookup)
        }
        guard let sender = pendingSends.update(lookup, to: stage) else { return [] }
        return loads + drainSends(of: sender, now: now, monotonicNow: monotonicNow)
    }

    /// Where a reply stands on its parent: ready, refused, or waiting for the parent's read.
    private mutating func parentStage(of send: MessageSend, ticket: WriteID) -> (SendsInArrivalOrder.Stage, [EngineEffect]) {
        guard let parentSeq = send.parentSeq else { return (.ready, []) }
        let key = MessageStates.Key(channel: send.channelID, seq: parentSeq)
        if let parent = messageStates.state(key) { return (judgeParent(parent, of: send), []) }
        repliesAwaitingParent[key, default: []].append(ticket)
        return (.lookingUp, loadStates([key]))
    }

    private func judgeParent(_ parent: MessageState, of send: MessageSend) -> SendsInArrivalOrder.Stage {
        guard let channel = directory.channels[send.channelID] else {
            return .answered(.failure(ChatError(.channelNotFound, "no channel \(send.channelID)")))
        }
        let hideBlocked = send.requester.session.map { sessions.hidesBlocked($0) } ?? false
        guard viewer(send.sender, hideBlocked: hideBlocked, in: channel).sees(parent.message) else {
            return .answered(.failure(ChatError(.badRequest, "parentSeq \(parent.message.seq) is no message of this channel")))
        }
        guard parent.message.parentSeq == nil else {
            return .answered(.failure(ChatError(.badRequest, "parentSeq \(parent.message.seq) is a reply; a reply cannot be a parent")))
        }
        return .ready
    }

    /// The parent read for waiting replies finished: each is judged and its sender drained.
    mutating func parentRead(_ key: MessageStates.Key, found: Bool, failed: Bool, now: Milliseconds,
                             monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for ticket in repliesAwaitingParent.removeValue(forKey: key) ?? [] {
            guard let send = pendingSends.entry(ticket)?.send else { continue }
            let stage: SendsInArrivalOrder.Stage
            if failed {
                stage = .answered(.failure(ChatError(.internalError, "storage failed; retry")))
            } else if found, let parent = messageStates.peek(key) {
                stage = judgeParent(parent, of: send)
            } else {
                stage = .answered(.failure(ChatError(.badRequest, "parentSeq \(key.seq) is no message of this channel")))
            }
            guard let sender = pendingSends.update(ticket, to: stage) else { continue }
            effects += drainSends(of: sender, now: now, monotonicNow: monotonicNow)
        }
        return effects
    }

    /// The shared limiter's answer to `takeRate`; nil when it could not answer (this node's
    /// own limiter decides then). `slowModeRetryAfterMs`: the channel's slow mode, shared by
    /// every node, refused the send (§16).
    public mutating func rateTaken(_ check: WriteID, _ decision: TokenBucketLimiter<UserNumber>.Decision?,
                                   slowModeRetryAfterMs: Int64? = nil, now: Milliseconds,
                                   monotonicNow: Milliseconds) -> [EngineEffect] {
        var stage = SendsInArrivalOrder.Stage.rated(decision)
        if let retryAfterMs = slowModeRetryAfterMs, let send = pendingSends.entry(check)?.send {
            let seconds = directory.channels[send.channelID]?.slowModeSeconds ?? 0
            stage = .answered(.failure(ChatError(.slowMode, "slow mode: one message per \(seconds) s; retry in \(retryAfterMs) ms",
                                                 retryAfterMs: retryAfterMs)))
        }
        guard let sender = pendingSends.update(check, to: stage) else { return [] }
        return drainSends(of: sender, now: now, monotonicNow: monotonicNow)
    }

    /// Cluster mode: the send asks the limiter every node shares, for the per-user rate when
    /// it is on and for the channel's slow mode when it holds the sender.
    private func asksShared(_ send: MessageSend) -> Bool {
        settings.sharedUserRate && (userMessageRates != nil || slowMode(for: send) != nil)
    }

    /// The slow mode that holds `send`'s sender in its channel, if any (§16).
    private func slowMode(for send: MessageSend) -> SlowModeAsk? {
        guard let channel = directory.channels[send.channelID], channel.slowModeSeconds > 0,
              !channel.role(of: send.sender).moderates else { return nil }
        return SlowModeAsk(channel: channel.id, intervalMilliseconds: Milliseconds(channel.slowModeSeconds) * 1000)
    }

    /// Settles the sender's queued sends from the oldest while they can be, then asks the
    /// shared rate for those that may ask now.
    mutating func drainSends(of sender: UserID, now: Milliseconds, monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        draining: while let head = pendingSends.head(of: sender) {
            let send = head.send
            let key = send.clientMessageID.map { ClientMessageKey(sender: sender, clientMessageID: $0) }
            switch head.stage {
            case .lookingUp, .rating:
                break draining
            case .ready where asksShared(send):
                break draining
            case .answered(let reply):
                effects.append(.reply(send.requester, reply))
                if let key { effects += settle(key, with: reply) }
            case .ready, .rated:
                // The channel may have changed while the send waited.
                do throws(ChatError) {
                    _ = try directory.memberChannel(send.channelID, of: sender)
                } catch {
                    effects.append(.reply(send.requester, .failure(error)))
                    if let key { effects += settle(key, with: .failure(error)) }
                    pendingSends.removeHead(of: sender)
                    continue draining
                }
                var decision: TokenBucketLimiter<UserNumber>.Decision?
                if case .rated(let shared) = head.stage { decision = shared }
                if decision == nil {
                    let user = number(for: sender)
                    decision = userMessageRates?.take(user, now: monotonicNow)
                }
                effects += store(send, rate: decision, now: now)
            }
            pendingSends.removeHead(of: sender)
        }
        if settings.sharedUserRate {
            var settled = false
            for entry in pendingSends.takeRatesToAsk(of: sender) {
                let slowMode = slowMode(for: entry.send)
                if userMessageRates == nil && slowMode == nil {
                    // Nothing to ask for this one (no rate, no slow mode): on in turn.
                    _ = pendingSends.update(entry.ticket, to: .rated(nil))
                    settled = true
                    continue
                }
                effects.append(.takeRate(entry.ticket, user: sender, ratePerSecond: userMessageRates?.ratePerSecond ?? 0,
                                         burst: userMessageRates?.burst ?? 1, now: now, slowMode: slowMode))
            }
            if settled { effects += drainSends(of: sender, now: now, monotonicNow: monotonicNow) }
        }
        return effects
    }

    private mutating func store(_ send: MessageSend, rate: TokenBucketLimiter<UserNumber>.Decision?,
                                now: Milliseconds) -> [EngineEffect] {
        let key = send.clientMessageID.map { ClientMessageKey(sender: send.sender, clientMessageID: $0) }
        var effects: [EngineEffect] = []
        if case .limited(let retryAfterMs)? = rate {
            counters.rateLimited += 1
            // One line when a user starts hitting the limit, not one per rejected send.
            if limitedUsers.insert(send.sender).inserted {
                effects.append(.log(.notice, "message.rate_limited", [
                    "user": .text(send.sender), "device": .text(send.device ?? ""), "retryAfterMs": .number(retryAfterMs),
                ], session: send.requester.session))
            }
            let error = ChatError(.rateLimited, "over \(userMessageRates?.ratePerSecond ?? 0) messages per second; retry in \(retryAfterMs) ms",
                                  retryAfterMs: retryAfterMs)
            effects.append(.reply(send.requester, .failure(error)))
            if let key { effects += settle(key, with: .failure(error)) }
            return effects
        }
        limitedUsers.remove(send.sender)
        guard let channel = directory.channels[send.channelID] else {
            // Checked by the caller; answered all the same rather than dropped.
            let error = ChatError(.channelNotFound, "no channel \(send.channelID)")
            return [.reply(send.requester, .failure(error))] + (key.map { settle($0, with: .failure(error)) } ?? [])
        }
        if channel.frozen || channel.slowModeSeconds > 0 {
            let role = channel.role(of: send.sender)
            let slot = SlowModeKey(channel: channel.id, user: send.sender)
            if let refusal = ModerationPolicy.sendRefusal(role: role, frozen: channel.frozen, slowModeSeconds: channel.slowModeSeconds,
                                                          lastSentAt: slowModeSends[slot], now: now) {
                effects.append(.reply(send.requester, .failure(refusal)))
                if let key { effects += settle(key, with: .failure(refusal)) }
                return effects
            }
            if channel.slowModeSeconds > 0 && !role.moderates { recordSlowModeSend(slot, at: now) }
        }
        var hiddenFrom: UserID?
        if directory.isShadowBanned(send.sender, in: channel, at: now) {
            // Stored and answered as ever, heard by nobody else (§16).
            hiddenFrom = Message.hiddenFromEveryone
        } else if channel.kind == .oneToOne, let other = channel.members.first(where: { $0 != send.sender }),
           DeliveryPolicy.hiddenForever(kind: .oneToOne, mode: settings.blockingMode,
                                        relation: relation(sender: send.sender, recipient: other)) {
            // Stored hidden from a recipient who blocked the sender (§5, 1-to-1).
            hiddenFrom = other
        }
        let message = Message(id: ids.make(prefix: "m_", at: now), channelID: channel.id, senderID: send.sender, text: send.text,
                              dataJSON: send.dataJSON, clientMessageID: send.clientMessageID, createdAt: now, hiddenFrom: hiddenFrom,
                              parentSeq: send.parentSeq, mentionedUserIDs: mentionable(send.mentionedUserIDs, in: channel))
        let write = nextWriteID()
        messageWrites.append(write, send)
        return [.persist(write, .insertMessage(message))]
    }

    mutating func messageCommitted(_ send: MessageSend, _ outcome: WriteOutcome, monotonicNow: Milliseconds) -> [EngineEffect] {
        let key = send.clientMessageID.map { ClientMessageKey(sender: send.sender, clientMessageID: $0) }
        if case .committed(.existingMessage(let stored)) = outcome {
            // A retry the store recognised (the first send went through another node, or its
            // answer was lost): answered with that message, delivered only the first time.
            // Fanned out only if this node has not had it (its first node died before publishing it).
            let json = Self.encode(stored)
            var effects: [EngineEffect] = [.reply(send.requester, .result(json))]
            effects += key.map { settle($0, with: .result(json)) } ?? []
            if let channel = directory.channels[stored.channelID] {
                effects += recordInOrder(stored, json: json, in: channel, excluding: send.requester.session,
                                         monotonicNow: monotonicNow)
            }
            return effects
        }
        if case .committed(.refused(let refusal)) = outcome {
            // The store judges membership and freeze again as they stand at commit (another
            // node may have banned the sender or frozen the channel first, §16); a parent the
            // engine judged cannot be gone (parents stay).
            let error: ChatError
            switch refusal {
            case .senderNotInChannel: error = ChatError(.channelNotFound, "no channel \(send.channelID)")
            case .channelFrozen: error = ChatError(.channelFrozen, "the channel is frozen")
            default: error = ChatError(.badRequest, "parentSeq is no message of this channel")
            }
            return [.reply(send.requester, .failure(error))] + (key.map { settle($0, with: .failure(error)) } ?? [])
        }
        guard case .committed(.message(let stored)) = outcome else {
            let error = ChatError(.internalError, "storage failed; retry")
            return [.reply(send.requester, .failure(error))] + (key.map { settle($0, with: .failure(error)) } ?? [])
        }
        counters.stored += 1
        let json = Self.encode(stored)
        var effects: [EngineEffect] = [.reply(send.requester, .result(json))]
        // Retries that waited are answered after the original send's reply.
        if let key { effects += settle(key, with: .result(json)) }
        guard let channel = directory.channels[stored.channelID] else { return effects }
        effects += recordInOrder(stored, json: json, in: channel, excluding: send.requester.session,
                                 monotonicNow: monotonicNow)
        effects += typingEndedBySend(stored, in: channel, excluding: send.requester.session, monotonicNow: monotonicNow)
        let pushes = pushEvents(for: stored, in: channel)
        if !pushes.isEmpty { effects.append(.push(pushes)) }
        return effects
    }

    /// A committed message (here or on another node) into the directory, and its
    /// `message.new` for this node's member connections.
    mutating func record(_ stored: Message, json: [UInt8], in channel: Channel, excluding: SessionID?,
                         monotonicNow: Milliseconds) -> [EngineEffect] {
        let relations = senderRelations(stored.senderID, in: channel)
        directory.record(stored, hiddenFor: relations.listUnmoved)
        var effects = announceNew(stored, json: json, in: channel, relations: relations, excluding: excluding,
                                  monotonicNow: monotonicNow)
        // A reply moved its parent's count: sent after the reply itself, to the replying
        // connection too (its `ok` was the reply, not the parent).
        if stored.parentSeq != nil { effects += logChange(.reply(stored, excluding: nil)) }
        return effects
    }

    /// `message.new` for this node's member connections (the §5 check is the hub's, per
    /// connection, from `MessageOrigin`), at the open channel's pace.
    mutating func announceNew(_ stored: Message, json: [UInt8], in channel: Channel, relations: SenderRelations,
                              excluding: SessionID?, monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        if stored.hiddenFrom == Message.hiddenFromEveryone {
            // Its sender's other connections only (§16), whatever the channel's pace.
            let event = WireEncoding.event("message.new", capacity: 64 + json.count) { $0.raw(bytes: json) }
            effects.append(.publishToUsers([stored.senderID], payload: event, excluding: excluding))
        } else if channel.kind != .open || openChannelRates?.admit(channel.id, now: monotonicNow) ?? true {
            let origin = MessageOrigin(sender: number(for: stored.senderID), hiddenFrom: stored.hiddenFrom.map { number(for: $0) },
                                       related: relations.related, kind: channel.kind, mode: settings.blockingMode)
            let event = WireEncoding.event("message.new", capacity: 64 + json.count) { $0.raw(bytes: json) }
            effects.append(.publishMessage(stored.channelID, payload: event, origin: origin, excluding: excluding))
        } else {
            counters.openChannelThrottled += 1
        }
        return effects
    }

    /// Answers every retry that waited for the first send of the same `clientMessageId`.
    private mutating func settle(_ key: ClientMessageKey, with reply: EngineReply) -> [EngineEffect] {
        guard let waiting = clientMessages.removeValue(forKey: key) else { return [] }
        return waiting.map { .reply($0, reply) }
    }

    /// A message as every recipient gets it (PROTOCOL.md §3): encoded once for the `ok`,
    /// `message.new` and a retry's answer.
    static func encode(_ message: Message) -> [UInt8] {
        var w = JSONWriter(capacity: encodedSizeEstimate(of: message))
        WireEncoding.write(message, to: &w)
        return w.bytes
    }

    /// Bytes enough for `message`'s JSON in one allocation: its field names and numbers
    /// (≈ 330 bytes) plus the variable parts.
    static func encodedSizeEstimate(of message: Message) -> Int {
        var size = 384 + message.id.utf8.count + message.channelID.utf8.count + message.senderID.utf8.count
        size += message.text.utf8.count + (message.dataJSON?.utf8.count ?? 0) + (message.clientMessageID?.utf8.count ?? 0)
        for user in message.mentionedUserIDs { size += user.utf8.count + 3 }
        return size + message.reactions.count * 24
    }

    /// The user's dense number, assigned on first sight.
    public mutating func number(for user: UserID) -> UserNumber {
        if let number = userNumbers[user] { return number }
        let number = UserNumber(userNumbers.count + 1)
        userNumbers[user] = number
        return number
    }

    mutating func numbered(_ user: UserID) -> NumberedUser {
        NumberedUser(id: user, number: number(for: user))
    }

    public func relation(sender: UserID, recipient: UserID) -> DeliveryPolicy.Relation {
        DeliveryPolicy.Relation(recipientBlockedSender: directory.blocks.hasBlocked(recipient, sender),
                                senderBlockedRecipient: directory.blocks.hasBlocked(sender, recipient))
    }

    /// The sender's block relations inside `channel`, from the cache.
    mutating func senderRelations(_ sender: UserID, in channel: Channel) -> SenderRelations {
        if let cached = relationsCache.cached(sender: sender, channel: channel.id, directory: directory) { return cached }
        var related: Set<UserNumber> = []
        var listUnmoved: Set<UserID> = []
        // Walk the sender's block relations (usually few), not the channel's members.
        for user in directory.blocks.blockers(of: sender).union(directory.blocks.blocked(by: sender))
        where directory.channelIDs(of: user).contains(channel.id) {
            related.insert(number(for: user))
            if !DeliveryPolicy.movesChannelList(kind: channel.kind, mode: settings.blockingMode,
                                                relation: relation(sender: sender, recipient: user)) {
                listUnmoved.insert(user)
            }
        }
        let fresh = SenderRelations(related: related.isEmpty ? nil : related, listUnmoved: listUnmoved)
        relationsCache.store(fresh, sender: sender, channel: channel.id)
        return fresh
    }

    /// Push events for members with no live connection, filtered by §5.
    private func pushEvents(for message: Message, in channel: Channel) -> [PushEvent] {
        guard channel.kind != .open else { return [] }
        var events: [PushEvent] = []
        for member in directory.offlineMembers(of: channel.id) where member != message.senderID && !message.isHidden(from: member) {
            // A member who muted the channel gets no push from it (§16).
            if channel.mutes[member]?.isInForce(at: message.createdAt) == true { continue }
            var relation = relation(sender: message.senderID, recipient: member)
            relation.recipientMutedSender = directory.users[member]?.mutedUsers.contains(message.senderID) == true
            if DeliveryPolicy.pushes(kind: channel.kind, mode: settings.blockingMode, relation: relation,
                                     pushFromBlockedUsers: channel.pushFromBlockedUsers) {
                events.append(PushEvent(userID: member, message: message, mentioned: message.mentionedUserIDs.contains(member)))
            }
        }
        return events
    }
}
