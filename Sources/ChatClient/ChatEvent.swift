/// What the gateway tells the app without being asked (PROTOCOL.md §7), and the client's own
/// connection changes.
public enum ChatEvent: Sendable, Equatable {
    /// `message.new` as it arrived (for exactly-once, in-order messages of a channel, use
    /// `ChatClient.messages(in:)`).
    case message(Message)
    /// `message.updated` (§15): a message's new state and why (an edit, a delete, or its
    /// thread's reply count). For a channel's messages with their changes folded in once,
    /// use `ChatClient.messages(in:)`.
    case messageUpdated(Message, change: MessageChange)
    /// `reaction.added` / `reaction.removed` (§15), with the message's counts now.
    case reaction(ReactionUpdate)
    case channelUpdated(Channel)
    case userBlocked(userId: String)
    case userUnblocked(userId: String)
    case sessionExpiring(expiresAt: Int64)
    case typing(channelId: String, userId: String, started: Bool)
    /// `typing.users` (§14, channels above `limits.typingListAboveMembers`): who types there
    /// now as this connection may hear it (the first 20 by when they started, and how many
    /// in all); it replaces the channel's list, and an empty list means nobody types.
    case typingUsers(channelId: String, userIds: [String], count: Int)
    case channelRead(channelId: String, userId: String, lastReadSeq: Int64)
    case presence(Presence)
    /// The gateway may have missed events for these channels; the client catches up the ones
    /// it follows by itself.
    case sessionResync(channelIds: [String])
    case connection(ConnectionState)
    /// The gateway ended the client for good and would refuse the user again: a deactivated
    /// (close 4002) or banned (4003, `isBanned`) user's live connection, or a refusal while
    /// reconnecting (a fresh token refused too). `.connection(.closed)` follows, requests still
    /// waiting fail with this error, and nothing is retried.
    case refused(ChatClientError)
    /// An event this client does not know yet: its name and `data` as JSON text.
    case other(name: String, data: String)

    /// The channel an event is about, if any.
    public var channelId: String? {
        switch self {
        case .message(let message), .messageUpdated(let message, _): return message.channelId
        case .reaction(let update): return update.channelId
        case .channelUpdated(let channel): return channel.id
        case .typing(let channel, _, _), .channelRead(let channel, _, _), .typingUsers(let channel, _, _): return channel
        default: return nil
        }
    }
}

/// Where the client's connection stands.
public enum ConnectionState: Sendable, Equatable {
    case connecting
    case connected
    /// Lost; the next attempt (counted from 1) is on its way after a backoff.
    case reconnecting(attempt: Int)
    /// `disconnect()`, or the gateway refused the user for good (deactivated, banned, token
    /// refused: `ChatEvent.refused` and `ChatClient.refusal` say which).
    case closed
}
