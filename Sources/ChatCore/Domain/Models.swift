/// Identifiers are client-visible strings.
public typealias UserID = String
public typealias ChannelID = String
public typealias MessageID = String

/// Milliseconds since the Unix epoch, as every time on the wire.
public typealias Milliseconds = Int64

/// PROTOCOL.md §3 `User`, without the per-viewer fields (`online`, `blockedByMe`, `hasBlockedMe`).
public struct User: Sendable, Equatable {
    public var id: UserID
    public var name: String
    public var image: String
    public var metadata: [String: String]
    public var createdAt: Milliseconds
    public var lastSeenAt: Milliseconds
    public var deactivated: Bool
    /// Users this user muted (§16 `user.mute`): never shown to anyone else.
    public var mutedUsers: Set<UserID>
    /// An app-wide ban by the backend (§16), in force until its `untilMs`.
    public var ban: Ban?

    public init(id: UserID, name: String = "", image: String = "", metadata: [String: String] = [:],
                createdAt: Milliseconds, lastSeenAt: Milliseconds = 0, deactivated: Bool = false,
                mutedUsers: Set<UserID> = [], ban: Ban? = nil) {
        self.id = id
        self.name = name
        self.image = image
        self.metadata = metadata
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.deactivated = deactivated
        self.mutedUsers = mutedUsers
        self.ban = ban
    }
}

public enum ChannelType: String, Sendable, Equatable {
    case group
    case open
}

/// PROTOCOL.md §3 `Channel`, without the per-viewer `lastMessage` / `lastActivityAt`.
public struct Channel: Sendable, Equatable {
    public var id: ChannelID
    public var type: ChannelType
    public var name: String
    /// Members in join order (group: members; open: current participants).
    public var members: [UserID]
    public var distinct: Bool
    /// A group channel created with exactly two members that nobody else ever joined.
    public var isOneToOne: Bool
    public var pushFromBlockedUsers: Bool
    public var createdAt: Milliseconds
    public var createdBy: UserID
    /// The member list as seen by inviters some of whose invitees had blocked them and were
    /// silently left out (PROTOCOL.md §5): the list they would see had nobody blocked them,
    /// so the reply does not reveal the block. Keyed by inviter; empty for most channels.
    public var inviterViews: [UserID: [UserID]]
    /// §16: roles named explicitly (`owner`, `moderator`; `member` only where it overrides the
    /// creator's implied `owner`).
    public var roles: [UserID: ChannelRole]
    /// Only owners and moderators may send.
    public var frozen: Bool
    /// Other members send at most one message per this many seconds (0: off).
    public var slowModeSeconds: Int
    /// Users banned from the channel (plain: kept out; shadow: kept in, heard by nobody).
    public var bans: [UserID: Ban]
    /// Members who muted the channel (no push from it).
    public var mutes: [UserID: ChannelMute]

    public init(id: ChannelID, type: ChannelType, name: String = "", members: [UserID], distinct: Bool = false,
                isOneToOne: Bool = false, pushFromBlockedUsers: Bool = false, createdAt: Milliseconds, createdBy: UserID,
                inviterViews: [UserID: [UserID]] = [:], roles: [UserID: ChannelRole] = [:], frozen: Bool = false,
                slowModeSeconds: Int = 0, bans: [UserID: Ban] = [:], mutes: [UserID: ChannelMute] = [:]) {
        self.id = id
        self.type = type
        self.name = name
        self.members = members
        self.distinct = distinct
        self.isOneToOne = isOneToOne
        self.pushFromBlockedUsers = pushFromBlockedUsers
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.inviterViews = inviterViews
        self.roles = roles
        self.frozen = frozen
        self.slowModeSeconds = slowModeSeconds
        self.bans = bans
        self.mutes = mutes
    }

    /// `user`'s role: the creator is `owner` unless the backend named another role.
    public func role(of user: UserID) -> ChannelRole {
        if let role = roles[user] { return role }
        return !createdBy.isEmpty && user == createdBy ? .owner : .member
    }

    /// The roles as the wire shows them: every owner and moderator.
    public var namedRoles: [UserID: ChannelRole] {
        var named = roles.filter { $0.value != .member }
        if !createdBy.isEmpty, roles[createdBy] == nil { named[createdBy] = .owner }
        return named
    }

    /// The ban on `user` in force at `now`, if any.
    public func ban(on user: UserID, at now: Milliseconds) -> Ban? {
        guard let ban = bans[user], ban.isInForce(at: now) else { return nil }
        return ban
    }

    /// The members `viewer` is shown: its inviter view when it has one.
    public func members(seenBy viewer: UserID) -> [UserID] {
        inviterViews.isEmpty ? members : inviterViews[viewer] ?? members
    }

    /// The channel as `viewer` is shown it.
    public func seen(by viewer: UserID) -> Channel {
        guard let view = inviterViews[viewer] else { return self }
        var copy = self
        copy.members = view
        copy.inviterViews = [:]
        return copy
    }
}

/// PROTOCOL.md §3 `Message` as stored (§15): the totals of its reactions and replies, not
/// yet as one viewer sees them (`MessageView`).
public struct Message: Sendable, Equatable {
    public var id: MessageID
    public var channelID: ChannelID
    /// Assigned by the store when the message commits: one more than the channel's last.
    public var seq: Int64
    public var senderID: UserID
    public var text: String
    /// The `data` object as JSON text, or nil.
    public var dataJSON: String?
    public var clientMessageID: String?
    public var createdAt: Milliseconds
    /// In a 1-to-1 channel, the member who had blocked the sender when it was sent (or when
    /// the sender edited it) and never sees it (PROTOCOL.md §5, §15).
    public var hiddenFrom: UserID?
    /// The message whose thread this reply is in; nil for a message of the channel itself.
    public var parentSeq: Int64?
    public var mentionedUserIDs: [UserID]
    public var editedAt: Milliseconds?
    public var deletedAt: Milliseconds?
    /// The channel version of the message's latest change (assigned by the store, like `seq`).
    public var version: Int64
    /// Reactions per kind, everyone's.
    public var reactions: [String: Int]
    /// Replies in its thread, everyone's (tombstones included).
    public var replyCount: Int

    public init(id: MessageID, channelID: ChannelID, seq: Int64 = 0, senderID: UserID, text: String,
                dataJSON: String? = nil, clientMessageID: String? = nil, createdAt: Milliseconds, hiddenFrom: UserID? = nil,
                parentSeq: Int64? = nil, mentionedUserIDs: [UserID] = [], editedAt: Milliseconds? = nil,
                deletedAt: Milliseconds? = nil, version: Int64 = 0, reactions: [String: Int] = [:], replyCount: Int = 0) {
        self.id = id
        self.channelID = channelID
        self.seq = seq
        self.senderID = senderID
        self.text = text
        self.dataJSON = dataJSON
        self.clientMessageID = clientMessageID
        self.createdAt = createdAt
        self.hiddenFrom = hiddenFrom
        self.parentSeq = parentSeq
        self.mentionedUserIDs = mentionedUserIDs
        self.editedAt = editedAt
        self.deletedAt = deletedAt
        self.version = version
        self.reactions = reactions
        self.replyCount = replyCount
    }

    public var isDeleted: Bool { deletedAt != nil }

    /// The `hiddenFrom` of a message only its sender sees: one a shadow-banned user sent or
    /// edited (§16). No user id can be `*`.
    public static let hiddenFromEveryone: UserID = "*"

    /// Whether the message is stored hidden from `viewer` (§5, §16). Its sender always sees it.
    public func isHidden(from viewer: UserID) -> Bool {
        guard let hiddenFrom else { return false }
        return hiddenFrom == viewer || (hiddenFrom == Self.hiddenFromEveryone && viewer != senderID)
    }
}

/// A member's stored read mark (PROTOCOL.md §14 `lastReadSeq`).
public struct ReadMark: Sendable, Equatable {
    public var channelID: ChannelID
    public var userID: UserID
    public var lastReadSeq: Int64

    public init(channelID: ChannelID, userID: UserID, lastReadSeq: Int64) {
        self.channelID = channelID
        self.userID = userID
        self.lastReadSeq = lastReadSeq
    }
}

/// Who sent a stored message and whom it is hidden from, without its content: what
/// unread counts are rebuilt from at start-up.
public struct MessageHeader: Sendable, Equatable {
    public var channelID: ChannelID
    public var seq: Int64
    public var senderID: UserID
    public var hiddenFrom: UserID?
    /// A tombstone no longer counts as unread for anyone (§15).
    public var deleted: Bool

    public init(channelID: ChannelID, seq: Int64, senderID: UserID, hiddenFrom: UserID?, deleted: Bool = false) {
        self.channelID = channelID
        self.seq = seq
        self.senderID = senderID
        self.hiddenFrom = hiddenFrom
        self.deleted = deleted
    }
}
