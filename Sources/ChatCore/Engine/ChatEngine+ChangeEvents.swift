/// A message's reaction events held back within one window (§15: a reaction storm on one
/// message sends each connection one event per window, with the counts as they are then).
struct ReactionWindow: Sendable {
    /// The last reaction change since the window's event went out, if any.
    var pending: MessageChange?
}

extension ChatEngine {
    /// The events of a change applied to `state` (now the message after it): `message.updated`
    /// for an edit or a delete, `reaction.added` / `reaction.removed` for a reaction.
    mutating func changeEvents(_ change: MessageChange, _ state: MessageState, in channel: Channel,
                               excluding: SessionID?) -> [EngineEffect] {
        switch change.action {
        case .edit, .delete:
            let name = change.action == .delete ? "delete" : "edit"
            let actor = change.actor
            return publishPerViewer(channel, state: state, ownReactions: true, also: [actor], excluding: excluding) { viewer in
                guard viewer.sees(state.message), viewer.hears(actor) else { return nil }
                return Self.messageUpdated(viewer.view(state), change: name)
            }
        case .addReaction, .removeReaction:
            let key = MessageStates.Key(channel: channel.id, seq: state.message.seq)
            // The actor's own connections always hear their own reaction at once.
            var effects = publishToOwnSessions(change.actor, channel, excluding: excluding) { viewer in
                Self.reactionEvent(change, counts: viewer.view(state).message.reactions)
            }
            guard settings.reactionEventWindowMilliseconds > 0 else {
                return effects + reactionBroadcast(change, state, in: channel, skippingActor: true)
            }
            if reactionWindows[key] != nil {
                reactionWindows[key] = ReactionWindow(pending: change)
                return effects
            }
            reactionWindows[key] = ReactionWindow(pending: nil)
            effects += reactionBroadcast(change, state, in: channel, skippingActor: true)
            effects.append(.checkReactionsLater(channel.id, seq: key.seq, afterMilliseconds: settings.reactionEventWindowMilliseconds))
            return effects
        }
    }

    /// A reaction window ended: the last change held back in it goes out with the counts
    /// as they are now, and a new window starts; a window with nothing held back closes.
    public mutating func reactionWindowDue(_ channelID: ChannelID, seq: Int64) -> [EngineEffect] {
        let key = MessageStates.Key(channel: channelID, seq: seq)
        guard let window = reactionWindows[key] else { return [] }
        guard let change = window.pending, let channel = directory.channels[channelID],
              let state = messageStates.state(key) else {
            reactionWindows[key] = nil
            return []
        }
        reactionWindows[key] = ReactionWindow(pending: nil)
        return reactionBroadcast(change, state, in: channel, skippingActor: false)
            + [.checkReactionsLater(channelID, seq: seq, afterMilliseconds: settings.reactionEventWindowMilliseconds)]
    }

    private mutating func reactionBroadcast(_ change: MessageChange, _ state: MessageState, in channel: Channel,
                                            skippingActor: Bool) -> [EngineEffect] {
        let actor = change.actor
        return publishPerViewer(channel, state: state, ownReactions: false, also: [actor], excluding: nil,
                                skipping: skippingActor ? [actor] : []) { viewer in
            guard viewer.sees(state.message), viewer.hears(actor) else { return nil }
            return Self.reactionEvent(change, counts: viewer.view(state).message.reactions)
        }
    }

    /// A reply moved its parent's count: `message.updated` with `"change":"reply"` to the
    /// connections that see the parent and the reply.
    mutating func replyCountEvents(_ parent: MessageState, reply: Message, in channel: Channel,
                                   excluding: SessionID?) -> [EngineEffect] {
        var also = [reply.senderID]
        if let hidden = reply.hiddenFrom, hidden != Message.hiddenFromEveryone { also.append(hidden) }
        return publishPerViewer(channel, state: parent, ownReactions: true, also: also, excluding: excluding) { viewer in
            guard viewer.sees(parent.message), viewer.seesReply(sender: reply.senderID, hiddenFrom: reply.hiddenFrom),
                  viewer.hears(reply.senderID) else { return nil }
            return Self.messageUpdated(viewer.view(parent), change: "reply")
        }
    }

    /// One event to every connection of the channel here, each as its viewer sees it.
    ///
    /// - Users blocked with nobody see the message as everyone does but for their own
    ///   reactions: one payload, encoded once, goes to every such user without a reaction
    ///   (`publishChange`, skipping the others), and one per set of own reactions to the users
    ///   who hold it (`publishChangeToUsers`), so a room of reactors who all chose the same
    ///   kind costs two encodings and two hub passes, not one per reactor.
    /// - The few others (users blocked with anyone in the channel, the member a message is
    ///   hidden from, `also`) are judged connection by connection.
    /// `payload` answers nil where the connection gets nothing.
    private mutating func publishPerViewer(_ channel: Channel, state: MessageState, ownReactions: Bool, also: [UserID],
                                           excluding: SessionID?, skipping: Set<UserID> = [],
                                           payload: (MessageViewer) -> [UInt8]?) -> [EngineEffect] {
        var judged = relatedMembers(of: channel)
        judged.formUnion(also)
        if let hidden = state.message.hiddenFrom, hidden != Message.hiddenFromEveryone { judged.insert(hidden) }
        judged.insert(state.message.senderID)
        // Shadow-banned members see their own reactions and replies; nobody else does.
        judged.formUnion(directory.shadowBanned(in: channel))
        var byOwnReactions: [[String]: Set<UserID>] = [:]
        if ownReactions {
            var reactors: Set<UserID> = []
            for users in state.reactors.values { reactors.formUnion(users) }
            for user in reactors where !judged.contains(user) && !skipping.contains(user) {
                byOwnReactions[state.reactions(of: user), default: []].insert(user)
            }
        }
        var effects: [EngineEffect] = []
        var skipped = Set(judged.union(skipping).map { number(for: $0) })
        for users in byOwnReactions.values { for user in users { skipped.insert(number(for: user)) } }
        let plain = MessageViewer(user: "", hideBlocked: false, kind: channel.kind, mode: settings.blockingMode,
                                  relations: shadowRelations(in: channel, seenBy: ""))
        if let shared = payload(plain) {
            effects.append(.publishChange(channel.id, payload: shared, skipping: skipped, excluding: excluding))
        }
        for users in byOwnReactions.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }).map(\.value) {
            guard let first = users.min() else { continue }
            let viewer = MessageViewer(user: first, hideBlocked: false, kind: channel.kind, mode: settings.blockingMode,
                                       relations: shadowRelations(in: channel, seenBy: first))
            if let bytes = payload(viewer) {
                effects.append(.publishChangeToUsers(channel.id, payload: bytes, users: Set(users.map { number(for: $0) }),
                                                     excluding: excluding))
            }
        }
        var bySessions: [[UInt8]: [SessionID]] = [:]
        for user in judged.sorted() where !skipping.contains(user) && isMember(user, of: channel) {
            for session in sessions.sessions(of: user) where session != excluding {
                let viewer = viewer(user, hideBlocked: sessions.hidesBlocked(session), in: channel)
                if let bytes = payload(viewer) { bySessions[bytes, default: []].append(session) }
            }
        }
        for (bytes, ids) in bySessions.sorted(by: { $0.value[0] < $1.value[0] }) {
            effects.append(.publishToSessions(ids, payload: bytes))
        }
        return effects
    }

    /// The event to the live connections of `user` here but `excluding`, each as it sees.
    private mutating func publishToOwnSessions(_ user: UserID, _ channel: Channel, excluding: SessionID?,
                                               payload: (MessageViewer) -> [UInt8]) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for session in sessions.sessions(of: user) where session != excluding {
            effects.append(.publishToSessions([session], payload: payload(viewer(user, hideBlocked: sessions.hidesBlocked(session), in: channel))))
        }
        return effects
    }

    func isMember(_ user: UserID, of channel: Channel) -> Bool {
        directory.channelIDs(of: user).contains(channel.id)
    }

    /// Members of `channel` blocked with anyone (either way): the only ones whose view of a
    /// message's counts and events can differ from the plain one. Cached per channel until
    /// a block or a membership changes.
    mutating func relatedMembers(of channel: Channel) -> Set<UserID> {
        if relatedMembersRevision != (directory.blocks.revision, directory.membershipRevision) {
            relatedMembersCache.removeAll(keepingCapacity: true)
            relatedMembersRevision = (directory.blocks.revision, directory.membershipRevision)
        }
        if let cached = relatedMembersCache[channel.id] { return cached }
        let blocks = directory.blocks
        var related: Set<UserID> = []
        let blockedUsers = blocks.blockedBy.count + blocks.blockers.count
        if blockedUsers < channel.members.count {
            for user in blocks.blockedBy.keys where isMember(user, of: channel) { related.insert(user) }
            for user in blocks.blockers.keys where isMember(user, of: channel) { related.insert(user) }
        } else {
            for user in channel.members where !blocks.blocked(by: user).isEmpty || !blocks.blockers(of: user).isEmpty {
                related.insert(user)
            }
        }
        if relatedMembersCache.count > 10_000 { relatedMembersCache.removeAll(keepingCapacity: true) }
        relatedMembersCache[channel.id] = related
        return related
    }

    /// `{"type":"event","event":"message.updated","data":{"message":…,"change":…}}`
    static func messageUpdated(_ view: MessageView, change: String) -> [UInt8] {
        WireEncoding.event("message.updated") { w in
            w.beginObject()
            w.key("message"); WireEncoding.write(view.message, ownReactions: view.ownReactions, to: &w)
            w.key("change"); w.string(change)
            w.endObject()
        }
    }

    /// `reaction.added` / `reaction.removed` with the counts as the recipient sees them.
    static func reactionEvent(_ change: MessageChange, counts: [String: Int]) -> [UInt8] {
        let added: Bool
        let kind: String
        switch change.action {
        case .addReaction(let k): (added, kind) = (true, k)
        case .removeReaction(let k): (added, kind) = (false, k)
        default: return []
        }
        return WireEncoding.event(added ? "reaction.added" : "reaction.removed") { w in
            w.beginObject()
            w.key("channelId"); w.string(change.channelID)
            w.key("seq"); w.int(change.seq)
            w.key("userId"); w.string(change.actor)
            w.key("kind"); w.string(kind)
            w.key("reactions"); WireEncoding.reactionCounts(counts, to: &w)
            w.endObject()
        }
    }
}
