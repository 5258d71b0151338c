/// A change to a stored message (PROTOCOL.md §15), as the engine decided it: an edit
/// carries the message's whole new content (what the request left out filled in).
public struct MessageChange: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// `hideFrom`: the other member of a 1-to-1 who blocks the author; an edit made
        /// during the block is something said during it, hidden from that member for good.
        case edit(text: String, dataJSON: String?, mentionedUserIDs: [UserID], hideFrom: UserID?)
        /// Leaves a tombstone: no text, data, mentions or reactions.
        case delete
        case addReaction(String)
        case removeReaction(String)
    }

    public var channelID: ChannelID
    public var seq: Int64
    /// Who made the change (the author for an edit; the reacting user for a reaction).
    public var actor: UserID
    public var at: Milliseconds
    public var action: Action

    public init(channelID: ChannelID, seq: Int64, actor: UserID, at: Milliseconds, action: Action) {
        self.channelID = channelID
        self.seq = seq
        self.actor = actor
        self.at = at
        self.action = action
    }

    /// At most this many reaction kinds per message (§15).
    public static let maxReactionKinds = 25

    /// A reaction's kind: 1 to 64 UTF-8 bytes, no control characters (§15). The one rule
    /// for a request's `kind` and for kinds another node put on the bus.
    public static func isReactionKind(_ kind: String) -> Bool {
        (1...64).contains(kind.utf8.count) && !kind.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Why the change cannot be made to a message in `state`, if it cannot: edits and
    /// reactions need a message that is not deleted, and a new reaction kind needs room.
    public func refusal(against state: Message) -> ChangeRefusal? {
        switch action {
        case .delete:
            return nil
        case .edit, .removeReaction:
            return state.isDeleted ? .messageDeleted : nil
        case .addReaction(let kind):
            if state.isDeleted { return .messageDeleted }
            if state.reactions[kind] == nil && state.reactions.count >= Self.maxReactionKinds { return .tooManyReactions }
            return nil
        }
    }

    /// The message after the change (its version left to the caller), for a change that
    /// `refusal` let through and that changes something.
    public func applied(to message: Message) -> Message {
        var next = message
        switch action {
        case .edit(let text, let dataJSON, let mentions, let hideFrom):
            next.text = text
            next.dataJSON = dataJSON
            next.mentionedUserIDs = mentions
            next.editedAt = at
            if let hideFrom { next.hiddenFrom = hideFrom }
        case .delete:
            next.text = ""
            next.dataJSON = nil
            next.mentionedUserIDs = []
            next.deletedAt = at
            next.reactions = [:]
        case .addReaction(let kind):
            next.reactions[kind, default: 0] += 1
        case .removeReaction(let kind):
            let left = (next.reactions[kind] ?? 1) - 1
            next.reactions[kind] = left > 0 ? left : nil
        }
        return next
    }

    /// Whether the change changes anything in `state`: not a reaction already there or
    /// already gone, nor a delete of a tombstone (those take no version).
    public func changes(_ state: MessageState) -> Bool {
        switch action {
        case .edit: return true
        case .delete: return !state.message.isDeleted
        case .addReaction(let kind): return !(state.reactors[kind]?.contains(actor) ?? false)
        case .removeReaction(let kind): return state.reactors[kind]?.contains(actor) ?? false
        }
    }

    /// Applies the change to `state` in place, who reacted kept up to date; the stored
    /// message (`stored`, with its version) replaces the copy's.
    public func apply(to state: inout MessageState, stored: Message) {
        switch action {
        case .edit: break
        case .delete: state.reactors = [:]
        case .addReaction(let kind): state.reactors[kind, default: []].insert(actor)
        case .removeReaction(let kind):
            state.reactors.modifyValue(forKey: kind) { $0.remove(actor) }
            if state.reactors[kind]?.isEmpty == true { state.reactors[kind] = nil }
        }
        state.message = stored
    }
}

/// Why the store refused a change another change got ahead of (on this node or another).
public enum ChangeRefusal: String, Sendable, Equatable {
    case messageNotFound
    case messageDeleted
    case tooManyReactions
    /// A message whose sender is no member of the channel when it commits (it left, or a
    /// ban took it out on another node first, §16).
    case senderNotInChannel
    /// A message from a member (not an owner or moderator) in a channel frozen when it commits.
    case channelFrozen
}
