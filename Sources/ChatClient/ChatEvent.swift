/// What the gateway tells the app without being asked (PROTOCOL.md §7), and the client's own
/// connection changes.
public enum ChatEvent: Sendable, Equatable {
    /// `message.new` as it arrived (for exactly-once, in-order messages of a channel, use
    /// `ChatClient.messages(in:)`).
    case message(Message)
    case channelUpdated(Channel)
    case userBlocked(userId: String)
    case userUnblocked(userId: String)
    case sessionExpiring(expiresAt: Int64)
    case typing(channelId: String, userId: String, started: Bool)
    case channelRead(channelId: String, userId: String, lastReadSeq: Int64)
    case presence(Presence)
    /// The gateway may have missed events for these channels; the client catches up the ones
    /// it follows by itself.
    case sessionResync(channelIds: [String])
    case connection(ConnectionState)
    /// An event this client does not know yet: its name and `data` as JSON text.
    case other(name: String, data: String)

    /// The channel an event is about, if any.
    public var channelId: String? {
        switch self {
        case .message(let message): return message.channelId
        case .channelUpdated(let channel): return channel.id
        case .typing(let channel, _, _), .channelRead(let channel, _, _): return channel
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
    /// `disconnect()`, or the gateway refused the user for good (deactivated, token refused).
    case closed
}
