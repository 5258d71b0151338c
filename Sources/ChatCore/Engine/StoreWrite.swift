/// One change for the store to persist: what the engine asks for (`EngineEffect.persist`)
/// and the store applies, in the order the writes were enqueued.
public enum StoreWrite: Sendable, Equatable {
    case upsertUser(User)
    case createChannel(Channel)
    case setUserDeactivated(UserID, Bool)
    /// Replaces the channel row (name, options, one-to-one flag) and its member list.
    case updateChannel(Channel)
    /// Stores a message; the store assigns `seq` (channel's last + 1) and `version` (the
    /// channel's next) inside the transaction. A reply (`parentSeq`) also counts in its
    /// parent, which takes the same version (§15).
    case insertMessage(Message)
    /// Changes a stored message (§15) unless `MessageChange.refusal` says no against the
    /// stored row; a change that changes nothing takes no version.
    case changeMessage(MessageChange)
    case setBlock(blocker: UserID, blocked: UserID, isBlocked: Bool, at: Milliseconds)
    /// Moves a member's read mark to `seq` unless it is already there or later (§14). A
    /// member's mark starts, when the channel or membership is written, at the channel's
    /// newest seq; a member that had one keeps it.
    case markRead(channelID: ChannelID, userID: UserID, seq: Int64)
    /// Stores a report of a message (§16); the store assigns its `id`.
    case insertFlag(Flag)
}

/// What a committed write produced.
public enum StoreWriteResult: Sendable, Equatable {
    case done
    /// A channel created or updated: the `seq` of its newest message as the write found it
    /// (every message stored after the write has a higher one), so a node that starts
    /// following the channel for a member the write added tells that member the messages
    /// after it.
    case channel(lastSeq: Int64)
    /// The message as stored, with its `seq`.
    case message(Message)
    /// A message with the same sender and `clientMessageId` was stored before (a retry, maybe
    /// through another node): that one, and nothing new was written.
    case existingMessage(Message)
    /// The message after a `changeMessage`, with the version the message had before it.
    case changed(Message, previousVersion: Int64)
    /// The change changed nothing (a reaction already there or already gone, a tombstone
    /// deleted again): the message as stored.
    case unchanged(Message)
    /// The stored message refused the change (another change got there first).
    case refused(ChangeRefusal)
    /// The flag as stored, with its `id`.
    case flag(Flag)
}


extension StoreWriteResult {
    /// A channel write's answer: the channel's newest seq as the write found it.
    public var channelLastSeq: Int64? {
        if case .channel(let lastSeq) = self { return lastSeq }
        return nil
    }

    /// Whether the store changed anything (a recognised retry did not).
    public var isNewWrite: Bool {
        switch self {
        case .existingMessage, .unchanged, .refused: return false
        case .done, .channel, .message, .changed, .flag: return true
        }
    }
}
