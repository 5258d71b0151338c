/// What a client asked to change about a message (§15), before the engine resolved it
/// against the message (`MessageChange`).
public enum RequestedChange: Sendable, Equatable {
    case edit(MessageEdit)
    case delete
    case addReaction(String)
    case removeReaction(String)
    /// `message.flag` (§16): a report for the backend, not a change of the message.
    case flag(reason: String)
}

/// A change request from one connection: whom it answers and how that connection sees.
struct ChangeRequest: Sendable {
    var channelID: ChannelID
    var seq: Int64
    var user: UserID
    var hideBlocked: Bool
    var requester: Requester
    var change: RequestedChange
    var now: Milliseconds
}

/// Whom a committed change answers, and how that requester sees the message.
struct ChangeAnswer: Sendable {
    var requester: Requester
    var user: UserID
    var hideBlocked: Bool
}

/// A committed change waiting its turn to be applied to the engine's copy of its message
/// and sent out, in the order this node learned of it (`ChatEngine.changeLog`).
enum LoggedChange: Sendable {
    /// A change of the message at `change.seq`, as stored.
    case changed(MessageChange, Message, previousVersion: Int64, answer: ChangeAnswer?, excluding: SessionID?)
    /// A change the store found to change nothing, or refused after the engine let it
    /// through (another change got there first): only answered.
    case unchanged(MessageChange, Message, answer: ChangeAnswer)
    /// A reply was stored: its parent's reply count moved (the parent is the key).
    case reply(Message, excluding: SessionID?)

    var key: MessageStates.Key {
        switch self {
        case .changed(let change, _, _, _, _), .unchanged(let change, _, _):
            return MessageStates.Key(channel: change.channelID, seq: change.seq)
        case .reply(let reply, _):
            return MessageStates.Key(channel: reply.channelID, seq: reply.parentSeq ?? 0)
        }
    }
}

extension ChatEngine {
    /// `message.update`, `message.delete`, `reaction.add`, `reaction.remove` (PROTOCOL.md §15).
    /// Rated per user (`limits.userChangesPerSecond`; in a cluster by the limiter every node
    /// shares, `takeChangeRate`), then judged against the engine's copy of the message (read
    /// from the store first when it has none): the caller must see the message, only its
    /// author edits or deletes it, a tombstone takes no edit or reaction, and at most 25
    /// kinds. A change that changes nothing is answered without a write.
    public mutating func requestChange(_ change: RequestedChange, channel channelID: ChannelID, seq: Int64, by user: UserID,
                                       hideBlocked: Bool, for requester: Requester, now: Milliseconds,
                                       monotonicNow: Milliseconds) -> [EngineEffect] {
        // The app's backend (admin API, no user) deletes like an owner, unrated (§16).
        let byBackend = requester.session == nil && user.isEmpty
        do throws(ChatError) {
            if byBackend {
                guard directory.channels[channelID] != nil else { throw ChatError(.channelNotFound, "no channel \(channelID)") }
            } else {
                _ = try directory.memberChannel(channelID, of: user)
            }
            if case .edit(let edit) = change, let text = edit.text, text.count > settings.maxTextLength {
                throw ChatError(.messageTooLong, "text is longer than \(settings.maxTextLength) characters")
            }
        } catch {
            return [.reply(requester, .failure(error))]
        }
        let request = ChangeRequest(channelID: channelID, seq: seq, user: user, hideBlocked: hideBlocked, requester: requester,
                                    change: change, now: now)
        if byBackend { return rated(request, nil) }
        if settings.sharedUserRate, let limiter = userChangeRates {
            let check = nextWriteID()
            changesAwaitingRate[check] = request
            return [.takeChangeRate(check, user: user, ratePerSecond: limiter.ratePerSecond, burst: limiter.burst, now: now)]
        }
        let userNumber = number(for: user)
        return rated(request, userChangeRates?.take(userNumber, now: monotonicNow))
    }

    /// The shared limiter's answer to `takeChangeRate`; nil when it could not answer (this
    /// node's own bucket decides then).
    public mutating func changeRateTaken(_ check: WriteID, _ decision: TokenBucketLimiter<UserNumber>.Decision?,
                                         monotonicNow: Milliseconds) -> [EngineEffect] {
        guard let request = changesAwaitingRate.removeValue(forKey: check) else { return [] }
        if let decision { return rated(request, decision) }
        let userNumber = number(for: request.user)
        return rated(request, userChangeRates?.take(userNumber, now: monotonicNow))
    }

    /// A change request past its rate: refused when limited, else on to its message.
    private mutating func rated(_ request: ChangeRequest, _ decision: TokenBucketLimiter<UserNumber>.Decision?) -> [EngineEffect] {
        if case .limited(let retryAfterMs)? = decision {
            counters.changesRateLimited += 1
            let error = ChatError(.rateLimited, "over \(userChangeRates?.ratePerSecond ?? 0) changes per second; retry in \(retryAfterMs) ms",
                                  retryAfterMs: retryAfterMs)
            return [.reply(request.requester, .failure(error))]
        }
        let key = MessageStates.Key(channel: request.channelID, seq: request.seq)
        if let state = messageStates.state(key) { return decide(request, against: state) }
        changeRequests[key, default: []].append(request)
        return loadStates([key])
    }

    /// Reads the states of `keys` not yet here or on their way.
    mutating func loadStates(_ keys: [MessageStates.Key]) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for (channel, group) in Dictionary(grouping: keys, by: \.channel) {
            let read = nextWriteID()
            let fresh = messageStates.startLoading(read, group)
            if !fresh.isEmpty { effects.append(.readMessageStates(read, channel: channel, seqs: fresh.map(\.seq))) }
        }
        return effects
    }

    /// The store's answer to `readMessageStates` (nil: the read failed). Whatever waited for
    /// these messages goes on: change requests are judged, logged changes sent out, replies
    /// whose parent was read are stored or refused.
    public mutating func messageStatesRead(_ read: WriteID, _ states: [MessageState]?, now: Milliseconds,
                                           monotonicNow: Milliseconds) -> [EngineEffect] {
        guard let keys = messageStates.finishLoading(read) else { return [] }
        for state in states ?? [] { messageStates.store(state) }
        var effects: [EngineEffect] = []
        for key in keys {
            let state = messageStates.peek(key)
            for request in changeRequests.removeValue(forKey: key) ?? [] {
                guard let state else {
                    let error = states == nil ? ChatError(.internalError, "storage failed; retry")
                                              : ChatError(.messageNotFound, "no message \(key.seq) in \(key.channel)")
                    effects.append(.reply(request.requester, .failure(error)))
                    continue
                }
                effects += decide(request, against: state)
            }
            effects += parentRead(key, found: state != nil, failed: states == nil, now: now, monotonicNow: monotonicNow)
        }
        for channel in Set(keys.map(\.channel)) { effects += drainChangeLog(channel, readFailed: states == nil) }
        return effects
    }

    /// Judges a change request against the message as committed.
    private mutating func decide(_ request: ChangeRequest, against state: MessageState) -> [EngineEffect] {
        guard let channel = directory.channels[request.channelID] else {
            return [.reply(request.requester, .failure(ChatError(.channelNotFound, "no channel \(request.channelID)")))]
        }
        let viewer = viewer(request.user, hideBlocked: request.hideBlocked, in: channel)
        let message = state.message
        let byBackend = request.requester.session == nil && request.user.isEmpty
        guard byBackend || viewer.sees(message) else {
            return [.reply(request.requester, .failure(ChatError(.messageNotFound, "no message \(request.seq) in \(request.channelID)")))]
        }
        let action: MessageChange.Action
        switch request.change {
        case .flag(let reason):
            let flag = Flag(channelID: channel.id, seq: message.seq, messageID: message.id, reporterID: request.user,
                            senderID: message.senderID, reason: reason, createdAt: request.now)
            let write = nextWriteID()
            flagWrites[write] = request.requester
            return [.persist(write, .insertFlag(flag))]
        case .edit(let edit):
            guard message.senderID == request.user else {
                return [.reply(request.requester, .failure(ChatError(.forbidden, "only the author may edit a message")))]
            }
            var hideFrom: UserID?
            if directory.isShadowBanned(request.user, in: channel, at: request.now) {
                // Said now by a shadow-banned author: heard by nobody else from now on (§16).
                if message.hiddenFrom != Message.hiddenFromEveryone { hideFrom = Message.hiddenFromEveryone }
            } else if channel.kind == .oneToOne, message.hiddenFrom == nil,
               let other = channel.members.first(where: { $0 != request.user }),
               DeliveryPolicy.hiddenForever(kind: .oneToOne, mode: settings.blockingMode,
                                            relation: relation(sender: request.user, recipient: other)) {
                // An edit is said now: in a 1-to-1 whose other member blocks the author, it
                // is hidden from that member for good, like a message sent now (§5, §15).
                hideFrom = other
            }
            action = .edit(text: edit.text ?? message.text, dataJSON: edit.dataJSON ?? message.dataJSON,
                           mentionedUserIDs: edit.mentionedUserIDs.map { mentionable($0, in: channel) } ?? message.mentionedUserIDs,
                           hideFrom: hideFrom)
        case .delete:
            // Owners and moderators keep their channel clean (§16).
            guard byBackend || message.senderID == request.user || channel.role(of: request.user).moderates else {
                return [.reply(request.requester, .failure(ChatError(.forbidden, "only the author or a moderator may delete a message")))]
            }
            action = .delete
        case .addReaction(let kind):
            action = .addReaction(kind)
        case .removeReaction(let kind):
            action = .removeReaction(kind)
        }
        let change = MessageChange(channelID: request.channelID, seq: request.seq, actor: request.user, at: request.now, action: action)
        if let refusal = change.refusal(against: message) {
            return [.reply(request.requester, .failure(Self.error(for: refusal, request.seq)))]
        }
        guard change.changes(state) else {
            // Already so (a reaction there or gone, a tombstone): answered as it is.
            return [.reply(request.requester, .result(viewer.view(state).encoded()))]
        }
        let write = nextWriteID()
        changeWrites[write] = (change, ChangeAnswer(requester: request.requester, user: request.user, hideBlocked: request.hideBlocked))
        return [.persist(write, .changeMessage(change))]
    }

    static func error(for refusal: ChangeRefusal, _ seq: Int64) -> ChatError {
        switch refusal {
        case .messageNotFound: return ChatError(.messageNotFound, "no message \(seq)")
        case .messageDeleted: return ChatError(.messageDeleted, "message \(seq) is deleted")
        case .tooManyReactions: return ChatError(.tooManyReactions, "message \(seq) already has \(MessageChange.maxReactionKinds) reaction kinds")
        case .senderNotInChannel: return ChatError(.channelNotFound, "not in the channel")
        case .channelFrozen: return ChatError(.channelFrozen, "the channel is frozen")
        }
    }

    /// `mentionedUserIds` as stored: members only, each once, in the order given (§15).
    func mentionable(_ ids: [UserID], in channel: Channel) -> [UserID] {
        var seen: Set<UserID> = []
        return ids.filter { id in
            seen.insert(id).inserted && (channel.members.contains(id) || directory.channelIDs(of: id).contains(channel.id))
        }
    }

    /// The outcome of a `changeMessage` write this engine asked for.
    mutating func changeCommitted(_ change: MessageChange, _ answer: ChangeAnswer, _ outcome: WriteOutcome) -> [EngineEffect] {
        switch outcome {
        case .failed:
            return [.reply(answer.requester, .failure(ChatError(.internalError, "storage failed; retry")))]
        case .committed(.refused(let refusal)):
            return [.reply(answer.requester, .failure(Self.error(for: refusal, change.seq)))]
        case .committed(.unchanged(let message)):
            return logChange(.unchanged(change, message, answer: answer))
        case .committed(.changed(let message, let previousVersion)):
            counters.changesStored += 1
            return logChange(.changed(change, message, previousVersion: previousVersion, answer: answer,
                                      excluding: answer.requester.session))
        case .committed:
            return [.reply(answer.requester, .failure(ChatError(.internalError, "unexpected store result")))]
        }
    }

    /// A change committed here or on another node, in the order this node learned of it.
    mutating func logChange(_ entry: LoggedChange) -> [EngineEffect] {
        let channel = entry.key.channel
        if deferWhileLoading(channel, .change(entry)) { return [] }
        changeLog[channel, default: []].append(entry)
        return drainChangeLog(channel, readFailed: false)
    }

    /// Applies and sends out the channel's logged changes, oldest first, while their
    /// messages are here; reads the first one that is not and waits for it. When that read
    /// failed, the entry goes out without its message: answered, but not sent to anyone
    /// (its clients catch up with `message.changes`).
    mutating func drainChangeLog(_ channelID: ChannelID, readFailed: Bool) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        while let entry = changeLog[channelID]?.first {
            let key = entry.key
            guard messageStates.contains(key) else {
                if messageStates.isLoading(key) && !readFailed { break }
                if !readFailed {
                    let loads = loadStates([key])
                    if !loads.isEmpty {
                        effects += loads
                        break
                    }
                }
                effects += settleWithoutState(entry)
                popChangeLog(channelID)
                continue
            }
            popChangeLog(channelID)
            effects += apply(entry)
        }
        return effects
    }

    private mutating func popChangeLog(_ channelID: ChannelID) {
        changeLog.modifyValue(forKey: channelID) { $0.removeFirst() }
        if changeLog[channelID]?.isEmpty == true { changeLog[channelID] = nil }
    }

    private mutating func settleWithoutState(_ entry: LoggedChange) -> [EngineEffect] {
        switch entry {
        case .changed(_, let message, _, let answer, _):
            directory.messageChanged(message)
            counters.changeEventsSkipped += 1
            return answer.map { [.reply($0.requester, .failure(ChatError(.internalError, "storage failed; the change was stored")))] } ?? []
        case .unchanged(_, _, let answer):
            return [.reply(answer.requester, .failure(ChatError(.internalError, "storage failed; retry")))]
        case .reply:
            counters.changeEventsSkipped += 1
            return []
        }
    }

    /// One logged change onto the engine's copy of its message, then its answer and events.
    private mutating func apply(_ entry: LoggedChange) -> [EngineEffect] {
        guard let channel = directory.channels[entry.key.channel], let version = messageStates.peek(entry.key)?.message.version
        else { return [] }
        switch entry {
        case .unchanged(_, _, let answer):
            guard let state = messageStates.state(entry.key) else { return [] }
            let viewer = viewer(answer.user, hideBlocked: answer.hideBlocked, in: channel)
            return [.reply(answer.requester, .result(viewer.view(state).encoded()))]
        case .changed(let change, let stored, let previousVersion, let answer, let excluding):
            if version == previousVersion {
                _ = messageStates.update(entry.key) { change.apply(to: &$0, stored: stored) }
            } else if version < stored.version {
                // A change this copy missed (another node's, not heard): read it again.
                messageStates.drop(entry.key)
                changeLog[channel.id, default: []].insert(entry, at: 0)
                return loadStates([entry.key])
            }
            guard let next = messageStates.peek(entry.key) else { return [] }
            directory.messageChanged(next.message)
            var effects: [EngineEffect] = []
            if let answer {
                let viewer = viewer(answer.user, hideBlocked: answer.hideBlocked, in: channel)
                effects.append(.reply(answer.requester, .result(viewer.view(next).encoded())))
            }
            effects += changeEvents(change, next, in: channel, excluding: excluding)
            return effects
        case .reply(let reply, let excluding):
            if version < reply.version {
                _ = messageStates.update(entry.key) { state in
                    state.addReply(sender: reply.senderID, hiddenFrom: reply.hiddenFrom)
                    state.message.version = reply.version
                }
            }
            guard let next = messageStates.peek(entry.key) else { return [] }
            return replyCountEvents(next, reply: reply, in: channel, excluding: excluding)
        }
    }
}
