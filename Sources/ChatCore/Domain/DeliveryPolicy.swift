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

    /// The block relation between one message's sender and one recipient.
    public struct Relation: Sendable, Equatable {
        /// The recipient has blocked the sender ("A blocked B", A receiving).
        public var recipientBlockedSender: Bool
        /// The sender has blocked the recipient.
        public var senderBlockedRecipient: Bool

        public init(recipientBlockedSender: Bool, senderBlockedRecipient: Bool) {
            self.recipientBlockedSender = recipientBlockedSender
            self.senderBlockedRecipient = senderBlockedRecipient
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
    public static func hiddenForever(kind: ChannelKind, mode: Mode, relation: Relation) -> Bool {
        kind == .oneToOne && relation.cuts(in: mode)
    }

    /// Live delivery to one connection of the recipient.
    public static func deliversLive(kind: ChannelKind, mode: Mode, relation: Relation, hideBlocked: Bool) -> Bool {
        guard relation.cuts(in: mode) else { return true }
        switch (mode, kind) {
        case (.strict, _), (.standard, .oneToOne): return false
        case (.standard, .group), (.standard, .open): return !hideBlocked
        }
    }

    /// A push event for a recipient with no live connection. Open channels never push.
    public static func pushes(kind: ChannelKind, mode: Mode, relation: Relation, pushFromBlockedUsers: Bool) -> Bool {
        guard kind != .open else { return false }
        guard relation.cuts(in: mode) else { return true }
        switch (mode, kind) {
        case (.standard, .group): return pushFromBlockedUsers
        default: return false
        }
    }

    /// Whether the recipient's `message.history` shows the message, judged by the
    /// block relation at read time. The stored hidden-forever flag hides on its own;
    /// in a standard 1-to-1 that flag is the whole rule, so what was said before the
    /// block stays readable.
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
    public static func movesChannelList(kind: ChannelKind, mode: Mode, relation: Relation) -> Bool {
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
