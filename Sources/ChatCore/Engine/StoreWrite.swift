/// One change for the store to persist: what the engine asks for (`EngineEffect.persist`)
/// and the store applies, in the order the writes were enqueued.
public enum StoreWrite: Sendable, Equatable {
    case upsertUser(User)
    case createChannel(Channel)
    case setUserDeactivated(UserID, Bool)
    /// Replaces the channel row (name, options, one-to-one flag) and its member list.
    case updateChannel(Channel)
    /// Stores a message; the store assigns `seq` (channel's last + 1) inside the transaction.
    case insertMessage(Message)
    case setBlock(blocker: UserID, blocked: UserID, isBlocked: Bool, at: Milliseconds)
    /// Moves a member's read mark to `seq` unless it is already there or later (§14). A
    /// member's mark starts, when the channel or membership is written, at the channel's
    /// newest seq; a member that had one keeps it.
    case markRead(channelID: ChannelID, userID: UserID, seq: Int64)
}

/// What a committed write produced.
public enum StoreWriteResult: Sendable, Equatable {
    case done
    /// The message as stored, with its `seq`.
    case message(Message)
    /// A message with the same sender and `clientMessageId` was stored before (a retry, maybe
    /// through another node): that one, and nothing new was written.
    case existingMessage(Message)
}


extension StoreWriteResult {
    /// Whether the store changed anything (a recognised retry did not).
    public var isNewWrite: Bool {
        if case .existingMessage = self { return false }
        return true
    }
}
