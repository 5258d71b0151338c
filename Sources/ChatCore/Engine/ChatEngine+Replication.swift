extension ChatEngine {
    /// A write another node committed (off the cluster bus, PROTOCOL.md §13): applied to
    /// this node's state as if it had committed here, with the events this node's own
    /// connections get. No reply (the committing node answered its requester) and no push
    /// event (the committing node emits those, once per offline member and message).
    public mutating func replicated(_ event: BusEvent, now: Milliseconds = 0, monotonicNow: Milliseconds) -> [EngineEffect] {
        switch event.write {
        case .insertMessage:
            // A recognised retry is published too: it fills the gap its first node left by dying
            // before it published; nodes that had the message drop it by its seq.
            let stored: Message
            switch event.result {
            case .message(let message): stored = message
            case .existingMessage(let message): stored = message
            case .done, .channel, .changed, .unchanged, .refused, .flag: return []
            }
            guard let channel = directory.channels[stored.channelID] else { return [] }
            if case .message = event.result { counters.stored += 1 }
            return recordInOrder(stored, json: Self.encode(stored), in: channel, excluding: nil, monotonicNow: monotonicNow)
        case .changeMessage(let change):
            guard case .changed(let stored, let previousVersion) = event.result else { return [] }
            counters.changesStored += 1
            return logChange(.changed(change, stored, previousVersion: previousVersion, answer: nil, excluding: nil))
        case .setBlock(let blocker, let blocked, let isBlocked, _):
            if isBlocked {
                directory.blocks.block(blocker, blocked)
            } else {
                directory.blocks.unblock(blocker, blocked)
            }
            return [
                .setBlock(blocker: numbered(blocker), blocked: numbered(blocked), isBlocked: isBlocked),
                .publishToUsers([blocker], payload: Self.blockEvent(blocked, isBlocked: isBlocked), excluding: nil),
            ]
        case .createChannel(let channel), .updateChannel(let channel):
            let before = Set(directory.channels[channel.id]?.members ?? [])
            let after = Set(channel.members)
            directory.install(channel)
            var effects: [EngineEffect] = []
            let added = channel.members.filter { !before.contains($0) }
            let removed = before.subtracting(after).sorted()
            if !added.isEmpty { effects.append(.addToChannel(added, channel.id)) }
            if !removed.isEmpty { effects.append(.removeFromChannel(removed, channel.id)) }
            effects += followMembers(added: added, removed: removed, of: channel.id, lastSeq: event.result.channelLastSeq,
                                     now: now)
            // As on the node that wrote it: an open channel's join or leave is told to the joiner only.
            let told = channel.type == .open && !(added.isEmpty && removed.isEmpty) ? added : channel.members
            return effects + announce(channel, to: told, excluding: nil)
        case .upsertUser(let user):
            let before = directory.users[user.id]?.ban
            directory.upsert(user)
            // An app-wide plain ban made on another node closes this node's connections too.
            if let ban = user.ban, !ban.shadow, ban != before {
                return [.closeSessions(sessions.sessions(of: user.id), .banned)]
            }
            return []
        case .markRead(let channelID, let userID, let seq):
            return readMarkReplicated(channelID, user: userID, seq: seq, monotonicNow: monotonicNow)
        case .setUserDeactivated(let id, let deactivated):
            guard var user = directory.users[id] else { return [] }
            user.deactivated = deactivated
            directory.upsert(user)
            return deactivated ? [.closeSessions(sessions.sessions(of: id), .deactivated)] : []
        case .insertFlag:
            // Flags are read from the store and pushed by the node that stored them.
            return []
        }
    }
}
