/// The parts of the message lifecycle (PROTOCOL.md §15) that are not a `Message` itself: what
/// a `message.updated` event says changed, a live reaction change, and a page of
/// `message.changes`.

/// Why a `message.updated` event came.
public enum MessageChange: Sendable, Equatable {
    case edit
    case delete
    /// A reply in the message's thread: its `replyCount` moved.
    case reply
    /// A change this client does not know yet.
    case other(String)

    public init(wire: String) {
        switch wire {
        case "edit": self = .edit
        case "delete": self = .delete
        case "reply": self = .reply
        default: self = .other(wire)
        }
    }
}

/// `reaction.added` / `reaction.removed`: who reacted with what, and the message's counts as
/// this user sees them now (the gateway may send one event for several changes under load;
/// the counts are always current).
public struct ReactionUpdate: Sendable, Equatable {
    public var channelId: String
    public var seq: Int64
    public var userId: String
    public var kind: String
    /// Kind → count, as this user sees them.
    public var reactions: [String: Int64]
    /// `reaction.added` (true) or `reaction.removed` (false).
    public var added: Bool

    public init(channelId: String, seq: Int64, userId: String, kind: String, reactions: [String: Int64], added: Bool) {
        self.channelId = channelId
        self.seq = seq
        self.userId = userId
        self.kind = kind
        self.reactions = reactions
        self.added = added
    }
}

/// One page of `message.changes`: messages created or changed after the version asked for,
/// each once in its latest state, ascending `version`.
public struct ChangesPage: Decodable, Sendable, Equatable {
    public var messages: [Message]
    /// The channel's version when the page was read.
    public var version: Int64
    /// More may follow: ask again with `afterVersion` = `next`. Nil: caught up to `version`.
    public var next: Int64?
}

/// Everything that changed in a channel after a version, all pages read.
public struct ChannelChanges: Sendable, Equatable {
    /// Each changed message once, in its latest state, ascending `version`.
    public var messages: [Message]
    /// The version the reader is caught up to.
    public var version: Int64
}
