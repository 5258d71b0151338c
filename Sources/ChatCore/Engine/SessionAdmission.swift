/// A connection whose token was verified, asking to become a live session (PROTOCOL.md §1).
public struct SessionRequest: Sendable, Equatable {
    /// The id the driver gave the connection (it says where the connection lives).
    public var id: SessionID
    public var user: UserID
    /// The token's profile fields; nil keeps what the directory has.
    public var name: String?
    public var image: String?
    /// Cluster mode: the shared connection set announces the user online to every node
    /// (this one included), so the engine does not announce it itself.
    public var presenceOnBus: Bool
    /// The connection hides blocked users' messages in groups (§5 `hideBlocked=1`).
    public var hideBlocked: Bool

    public init(id: SessionID, user: UserID, name: String? = nil, image: String? = nil, presenceOnBus: Bool = false,
                hideBlocked: Bool = false) {
        self.id = id
        self.hideBlocked = hideBlocked
        self.user = user
        self.name = name
        self.image = image
        self.presenceOnBus = presenceOnBus
    }
}

/// What a newly admitted session starts with: its user's dense number, the channels it
/// receives, and the fan-out filter's blocked sets (later changes arrive as `.setBlock`
/// and channel effects, queued after this one).
public struct SessionSeed: Sendable, Equatable {
    public var userNumber: UserNumber
    public var channels: Set<ChannelID>
    /// Numbers of the users this user blocked, and of those who blocked this user.
    public var blocked: Set<UserNumber>
    public var blockedBy: Set<UserNumber>
}

/// Why the engine refused a session.
public enum SessionRefusalReason: Sendable, Equatable {
    case deactivated
    /// An app-wide plain ban in force (§16).
    case banned
    /// The user already holds this many live connections here (the per-user cap).
    case tooManyConnections(live: Int)
}

/// A user named in a block change, with its dense number (the fan-out filter's key).
public struct NumberedUser: Sendable, Equatable {
    public var id: UserID
    public var number: UserNumber
}
