/// How one connection sees the messages of one channel, and the events about them
/// (PROTOCOL.md §5, §15 "Blocks cover every kind of event"): built from the block
/// relations of its user as they stand now, so every view, live event and history page
/// of the lifecycle asks these few functions.
///
/// - A message is seen where §5 shows it in history (not stored hidden from the viewer,
///   and not cut by a block the viewer's connection hides). Events about a message that
///   is not seen never reach the connection.
/// - What a user does to a message (an edit, a reaction, a reply) is heard where that
///   user's new messages would reach the connection live; a reaction that is not heard
///   does not count, a reply that is not seen does not count.
/// - A user always sees and hears itself.
public struct MessageViewer: Sendable {
    public var user: UserID
    public var hideBlocked: Bool
    public var kind: DeliveryPolicy.ChannelKind
    public var mode: DeliveryPolicy.Mode
    /// The relation of each user the viewer is blocked with (either way), as sender to the
    /// viewer; everyone else has none.
    public var relations: [UserID: DeliveryPolicy.Relation]

    public init(user: UserID, hideBlocked: Bool, kind: DeliveryPolicy.ChannelKind, mode: DeliveryPolicy.Mode,
                relations: [UserID: DeliveryPolicy.Relation] = [:]) {
        self.user = user
        self.hideBlocked = hideBlocked
        self.kind = kind
        self.mode = mode
        self.relations = relations
    }

    /// Whether a stored message is shown to the connection (history, `message.changes`,
    /// and every event about it).
    public func sees(_ message: Message) -> Bool {
        if message.senderID == user { return true }
        if message.isHidden(from: user) { return false }
        guard let relation = relations[message.senderID] else { return true }
        return DeliveryPolicy.showsInHistory(kind: kind, mode: mode, relation: relation, hideBlocked: hideBlocked)
    }

    /// Whether what `actor` does now reaches the connection (its edits, reactions and
    /// replies), judged like its new messages (§5 live delivery).
    public func hears(_ actor: UserID) -> Bool {
        if actor == user { return true }
        guard let relation = relations[actor] else { return true }
        return DeliveryPolicy.deliversLive(kind: kind, mode: mode, relation: relation, hideBlocked: hideBlocked)
    }

    /// Whether a reply of `sender` stored hidden from `hiddenFrom` counts in `replyCount`.
    public func seesReply(sender: UserID, hiddenFrom: UserID?) -> Bool {
        if sender == user { return true }
        if hiddenFrom == user || hiddenFrom == Message.hiddenFromEveryone { return false }
        guard let relation = relations[sender] else { return true }
        return DeliveryPolicy.showsInHistory(kind: kind, mode: mode, relation: relation, hideBlocked: hideBlocked)
    }

    /// The users whose reactions and replies may not count for this viewer: where their
    /// views differ from the totals, only their rows need reading.
    public var cutUsers: Set<UserID> {
        Set(relations.compactMap { user, relation in
            DeliveryPolicy.deliversLive(kind: kind, mode: mode, relation: relation, hideBlocked: hideBlocked)
                && DeliveryPolicy.showsInHistory(kind: kind, mode: mode, relation: relation, hideBlocked: hideBlocked)
                ? nil : user
        })
    }

    /// The message as this viewer sees it, from its full state: reactions of users it does
    /// not hear and replies it does not see left out, and its own reactions.
    public func view(_ state: MessageState) -> MessageView {
        var message = state.message
        var own: [String] = []
        for (kind, users) in state.reactors {
            if users.contains(user) { own.append(kind) }
            guard !relations.isEmpty else { continue }
            var unheard = 0
            for other in relations.keys where users.contains(other) && !hears(other) { unheard += 1 }
            if unheard > 0 { subtract(unheard, of: kind, from: &message) }
        }
        if !relations.isEmpty || state.replies.contains(where: { $0.hiddenFrom != nil }) {
            message.replyCount = state.replies.reduce(0) { $0 + (seesReply(sender: $1.sender, hiddenFrom: $1.hiddenFrom) ? $1.count : 0) }
        }
        return MessageView(message: message, ownReactions: own.sorted())
    }

    /// The message as this viewer sees it, from its stored totals and the attributions of
    /// its page (the reactions of this viewer and of the users it is blocked with, and the
    /// reply tallies of those users or hidden from it).
    public func view(_ stored: Message, reactions: [MessageAttributions.Reaction], replies: [ReplyTally]) -> MessageView {
        var message = stored
        var own: [String] = []
        for reaction in reactions {
            if reaction.user == user {
                own.append(reaction.kind)
            } else if !hears(reaction.user) {
                subtract(1, of: reaction.kind, from: &message)
            }
        }
        for tally in replies where !seesReply(sender: tally.sender, hiddenFrom: tally.hiddenFrom) {
            message.replyCount = max(0, message.replyCount - tally.count)
        }
        return MessageView(message: message, ownReactions: own.sorted())
    }

    private func subtract(_ count: Int, of kind: String, from message: inout Message) {
        let left = (message.reactions[kind] ?? 0) - count
        message.reactions[kind] = left > 0 ? left : nil
    }
}

/// A message as one viewer sees it: counts adjusted, and the viewer's own reactions.
public struct MessageView: Sendable, Equatable {
    public var message: Message
    public var ownReactions: [String]

    public init(message: Message, ownReactions: [String] = []) {
        self.message = message
        self.ownReactions = ownReactions
    }

    public func encoded() -> [UInt8] {
        var w = JSONWriter(capacity: 320 + message.text.utf8.count)
        WireEncoding.write(message, ownReactions: ownReactions, to: &w)
        return w.bytes
    }
}

extension ChatEngine {
    /// The viewer of `channel` for one connection of `user`.
    /// The users it is blocked with, and the channel's shadow-banned members (§16), are
    /// its relations.
    public func viewer(_ user: UserID, hideBlocked: Bool, in channel: Channel) -> MessageViewer {
        var relations = shadowRelations(in: channel, seenBy: user)
        for other in directory.blocks.blocked(by: user).union(directory.blocks.blockers(of: user)) where other != user {
            relations[other, default: .none].recipientBlockedSender = directory.blocks.hasBlocked(user, other)
            relations[other, default: .none].senderBlockedRecipient = directory.blocks.hasBlocked(other, user)
        }
        return MessageViewer(user: user, hideBlocked: hideBlocked, kind: channel.kind, mode: settings.blockingMode,
                             relations: relations)
    }
}

extension ChatEngine {
    /// The channel's shadow-banned members but `viewer`, as senders to it: heard by nobody.
    func shadowRelations(in channel: Channel, seenBy viewer: UserID) -> [UserID: DeliveryPolicy.Relation] {
        var relations: [UserID: DeliveryPolicy.Relation] = [:]
        for banned in directory.shadowBanned(in: channel) where banned != viewer {
            relations[banned] = DeliveryPolicy.Relation(recipientBlockedSender: false, senderBlockedRecipient: false,
                                                        senderShadowBanned: true)
        }
        return relations
    }
}
