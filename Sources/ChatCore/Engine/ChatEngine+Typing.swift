extension ChatEngine {
    /// `typing.start` (PROTOCOL.md §14): answered `{}`; forwarded to the channel's other
    /// connections at most once every 2 s per user and channel, filtered like `message.new`
    /// (§5); the state ends after 10 s without another.
    public mutating func typingStart(_ channelID: ChannelID, from user: UserID, session: SessionID?, for requester: Requester,
                                     monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        guard let channel = typingChannel(channelID, of: user, for: requester, answer: &effects) else { return effects }
        switch typing.start(TypingStates.Key(channel: channelID, user: user), now: monotonicNow) {
        case .forward:
            effects += typingEvent(started: true, in: channel, from: user, excluding: session, monotonicNow: monotonicNow)
        case .announceAt(let time):
            effects.append(.checkTypingLater(channelID, user: user, afterMilliseconds: max(0, time - monotonicNow)))
        case .held:
            break
        }
        effects.append(.checkTypingLater(channelID, user: user, afterMilliseconds: TypingStates.expiry))
        return effects
    }

    /// `typing.stop`: answered `{}`; `typing.stop` goes out if the user was typing there.
    public mutating func typingStop(_ channelID: ChannelID, from user: UserID, session: SessionID?,
                                    for requester: Requester, monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        guard let channel = typingChannel(channelID, of: user, for: requester, answer: &effects) else { return effects }
        if typing.stop(TypingStates.Key(channel: channelID, user: user)) {
            effects += typingEvent(started: false, in: channel, from: user, excluding: session, monotonicNow: monotonicNow)
        }
        return effects
    }

    /// A typing timer is due: 10 s after a `typing.start` the state ends unless renewed, and
    /// a start held back by the 2 s interval is announced once it is over.
    public mutating func typingDue(_ channelID: ChannelID, user: UserID, monotonicNow: Milliseconds) -> [EngineEffect] {
        let key = TypingStates.Key(channel: channelID, user: user)
        guard let channel = directory.channels[channelID] else { return [] }
        if typing.expire(key, now: monotonicNow) {
            return typingEvent(started: false, in: channel, from: user, excluding: nil, monotonicNow: monotonicNow)
        }
        if typing.announceIfDue(key, now: monotonicNow) {
            return typingEvent(started: true, in: channel, from: user, excluding: nil, monotonicNow: monotonicNow)
        }
        return []
    }

    /// Another node's typing change (off the bus): fanned out here, not relayed again.
    public mutating func typingRelayed(_ relay: TypingRelay, monotonicNow: Milliseconds) -> [EngineEffect] {
        guard let channel = directory.channels[relay.channelID] else { return [] }
        return typingFanOut(started: relay.started, in: channel, from: relay.userID, excluding: nil, monotonicNow: monotonicNow)
    }

    /// A message from a typing user ends the state: `typing.stop` after its `message.new`.
    mutating func typingEndedBySend(_ stored: Message, in channel: Channel, excluding: SessionID?,
                                    monotonicNow: Milliseconds) -> [EngineEffect] {
        guard typing.stop(TypingStates.Key(channel: channel.id, user: stored.senderID)) else { return [] }
        return typingEvent(started: false, in: channel, from: stored.senderID, excluding: excluding, monotonicNow: monotonicNow)
    }

    /// The channel, when `user` may type in it (`answer` gets `{}`); nil when not (`answer`
    /// gets the error `message.send` would).
    private func typingChannel(_ channelID: ChannelID, of user: UserID, for requester: Requester,
                               answer: inout [EngineEffect]) -> Channel? {
        do throws(ChatError) {
            let channel = try directory.memberChannel(channelID, of: user)
            answer.append(.reply(requester, .result(Self.emptyObject)))
            return channel
        } catch {
            answer.append(.reply(requester, .failure(error)))
            return nil
        }
    }

    /// A typing change this node decided: fanned out here and relayed to the other nodes.
    private mutating func typingEvent(started: Bool, in channel: Channel, from user: UserID,
                                      excluding: SessionID?, monotonicNow: Milliseconds) -> [EngineEffect] {
        if started { counters.typingStarts += 1 } else { counters.typingStops += 1 }
        return typingFanOut(started: started, in: channel, from: user, excluding: excluding, monotonicNow: monotonicNow)
            + [.relayTyping(started: started, channel.id, user: user)]
    }

    /// A typing change told to the channel's connections here: in a large channel through its
    /// `typing.users` list, else as the typist's own event.
    private mutating func typingFanOut(started: Bool, in channel: Channel, from user: UserID,
                                       excluding: SessionID?, monotonicNow: Milliseconds) -> [EngineEffect] {
        if listsTyping(in: channel) {
            return typingListChanged(channel, user: user, typing: started, monotonicNow: monotonicNow)
        }
        return [typingEventFanOut(started: started, in: channel, from: user, excluding: excluding)]
    }

    /// A typing event fanned out like a message of `user` (the same §5 check per connection).
    private mutating func typingEventFanOut(started: Bool, in channel: Channel, from user: UserID,
                                            excluding: SessionID?) -> EngineEffect {
        let name = started ? "typing.start" : "typing.stop"
        let payload = WireEncoding.event(name) { w in
            w.beginObject()
            w.key("channelId"); w.string(channel.id)
            w.key("userId"); w.string(user)
            w.endObject()
        }
        // A shadow-banned user's typing reaches its own connections only (§16).
        if directory.shadowBanned(in: channel).contains(user) {
            return .publishToUsers([user], payload: payload, excluding: excluding)
        }
        let relations = senderRelations(user, in: channel)
        // Nor does a muted user's reach its muters.
        let muters = directory.muters(of: user).filter { directory.channelIDs(of: $0).contains(channel.id) }
        let origin = MessageOrigin(sender: number(for: user), hiddenFrom: nil, related: relations.related,
                                   kind: channel.kind, mode: settings.blockingMode,
                                   silenced: muters.isEmpty ? nil : Set(muters.map { number(for: $0) }))
        return .publishMessage(channel.id, payload: payload, origin: origin, excluding: excluding)
    }
}
