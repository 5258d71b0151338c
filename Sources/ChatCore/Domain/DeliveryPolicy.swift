/// PROTOCOL.md §5: what a block does to one message for one recipient. Every
/// live delivery, push event and history read asks this one place.
public enum DeliveryPolicy {
    public enum Mode: String, Sendable, Equatable, CaseIterable {
        /// Only the blocker stops hearing the blocked user (the §5 table).
        case standard
        /// A block cuts all communication both ways, in every channel type.
        case strict
    }

    public enum ChannelKind: Sendable, Equatable, CaseIterable {
        /// A group channel created with exactly two members that nobody else joined.
        case oneToOne
        /// Any other group channel.
        case group
        case open
    }

    /// What stands between one message's sender and one recipient: blocks (§5), a shadow
    /// ban of the sender (§16: the 1-to-1 block rule applied by everyone at once) and the
    /// recipient's mute of the sender (§16: a quiet block that only stops push).
    public struct Relation: Sendable, Equatable {
        /// The recipient has blocked the sender ("A blocked B", A receiving).
        public var recipientBlockedSender: Bool
        /// The sender has blocked the recipient.
        public var senderBlockedRecipient: Bool
        /// The sender is shadow-banned where the message is sent (the channel or the app).
        public var senderShadowBanned: Bool
        /// The recipient has muted the sender.
        public var recipientMutedSender: Bool

        public init(recipientBlockedSender: Bool, senderBlockedRecipient: Bool, senderShadowBanned: Bool = false,
                    recipientMutedSender: Bool = false) {
            self.recipientBlockedSender = recipientBlockedSender
            self.senderBlockedRecipient = senderBlockedRecipient
            self.senderShadowBanned = senderShadowBanned
            self.recipientMutedSender = recipientMutedSender
        }

        public static let none = Relation(recipientBlockedSender: false, senderBlockedRecipient: false)

        /// Whether the mode treats this pair as blocked from the recipient's side.
        func cuts(in mode: Mode) -> Bool {
            switch mode {
            case .standard: return recipientBlockedSender
            case .strict: return recipientBlockedSender || senderBlockedRecipient
            }
        }

    }

    /// Stored hidden from the recipient for good: a 1-to-1 message sent while
    /// the recipient blocked the sender (both ways in strict mode).
    /// A shadow-banned sender's messages are stored hidden from every recipient, in every
    /// kind of channel (§16).
    public static func hiddenForever(kind: ChannelKind, mode: Mode, relation: Relation) -> Bool {
        relation.senderShadowBanned || (kind == .oneToOne && relation.cuts(in: mode))
    }

    /// Live delivery to one connection of the recipient.
    /// A mute delivers: it only stops push.
    public static func deliversLive(kind: ChannelKind, mode: Mode, relation: Relation, hideBlocked: Bool) -> Bool {
        if relation.senderShadowBanned { return false }
        guard relation.cuts(in: mode) else { return true }
        switch (mode, kind) {
        case (.strict, _), (.standard, .oneToOne): return false
        case (.standard, .group), (.standard, .open): return !hideBlocked
        }
    }

    /// A push event for a recipient with no live connection. Open channels never push, a
    /// shadow-banned sender pushes nobody, and a muted one never pushes its muter (mentions
    /// included, §16).
    public static func pushes(kind: ChannelKind, mode: Mode, relation: Relation, pushFromBlockedUsers: Bool) -> Bool {
        guard kind != .open, !relation.senderShadowBanned, !relation.recipientMutedSender else { return false }
        guard relation.cuts(in: mode) else { return true }
        switch (mode, kind) {
        case (.standard, .group): return pushFromBlockedUsers
        default: return false
        }
    }

    /// Whether the recipient's `message.history` shows the message, judged by the
    /// block relation at read time. The stored hidden-forever flag hides on its own;
    /// in a standard 1-to-1 that flag is the whole rule, so what was said before the
    /// block stays readable. A shadow ban is the same: what its user said before it stays.
    public static func showsInHistory(kind: ChannelKind, mode: Mode, relation: Relation, hideBlocked: Bool) -> Bool {
        guard relation.cuts(in: mode) else { return true }
        switch (mode, kind) {
        case (.strict, _): return false
        case (.standard, .group): return !hideBlocked
        case (.standard, .oneToOne), (.standard, .open): return true
        }
    }

    /// Whether a message moves the recipient's `lastMessage` / `lastActivityAt`:
    /// not a hidden-forever 1-to-1 message, and in strict mode nothing across a block.
    /// Typing of the sender reaches the recipient's connection: where its messages would
    /// live, and never a muter (§16).
    public static func sendsTyping(kind: ChannelKind, mode: Mode, relation: Relation, hideBlocked: Bool) -> Bool {
        !relation.recipientMutedSender && deliversLive(kind: kind, mode: mode, relation: relation, hideBlocked: hideBlocked)
    }

    public static func movesChannelList(kind: ChannelKind, mode: Mode, relation: Relation) -> Bool {
        if relation.senderShadowBanned { return false }
        switch mode {
        case .standard: return !hiddenForever(kind: kind, mode: mode, relation: relation)
        case .strict: return !relation.cuts(in: mode)
        }
    }
}

extension Channel {
    public var kind: DeliveryPolicy.ChannelKind {
        switch type {
        case .open: return .open
        case .group: return isOneToOne ? .oneToOne : .group
        }
    }
}
