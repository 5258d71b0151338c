import Foundation

/// PROTOCOL.md §3 objects as the gateway sends them.

public struct User: Decodable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var image: String
    public var metadata: [String: String]
    public var online: Bool
    public var lastSeenAt: Int64
    public var blockedByMe: Bool
    /// Only where the gateway reveals it (`blocking.revealBlockedBy`); nil otherwise.
    public var hasBlockedMe: Bool?
}

public struct Channel: Decodable, Sendable, Equatable {
    public var id: String
    public var type: String
    public var name: String
    /// The members; an open channel's lists only you (`memberCount` counts them all).
    public var members: [String]
    public var memberCount: Int64
    public var distinct: Bool
    public var isOneToOne: Bool
    public var pushFromBlockedUsers: Bool
    public var createdAt: Int64
    public var lastMessage: Message?
    public var lastActivityAt: Int64
    public var lastReadSeq: Int64
    public var unreadCount: Int64
    /// The channel's change counter (v1.2, §15): every new message, edit, delete, reaction and
    /// reply takes the next value. 0 from a gateway before v1.2.
    public var version: Int64 = 0
    // Moderation (§16); the defaults are what a gateway without moderation means by leaving
    // the fields out.
    /// User id → role, for every owner and moderator; everyone else is a member.
    public var roles: [String: ChannelRole] = [:]
    /// Only owners and moderators may send (others get `.channelFrozen`).
    public var frozen = false
    /// 0, or how many seconds a member waits between two messages (`.slowMode`).
    public var slowModeSeconds = 0
    /// This user muted the channel: its messages still arrive and count, but never push.
    public var muted = false
    /// User id → ban; shown only to the channel's owners and moderators (nil for everyone else).
    public var bans: [String: ChannelBan]? = nil

    /// `userID`'s role here: `.member` unless `roles` names it.
    public func role(of userID: String) -> ChannelRole { roles[userID] ?? .member }
}

extension Channel {
    enum CodingKeys: String, CodingKey {
        case id, type, name, members, memberCount, distinct, isOneToOne, pushFromBlockedUsers, createdAt
        case lastMessage, lastActivityAt, lastReadSeq, unreadCount, version
        case roles, frozen, slowModeSeconds, muted, bans
    }

    /// `version` and the moderation fields are read where present, so channels of a gateway
    /// before v1.2, or without moderation, decode too.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        type = try c.decode(String.self, forKey: .type)
        name = try c.decode(String.self, forKey: .name)
        members = try c.decode([String].self, forKey: .members)
        memberCount = try c.decode(Int64.self, forKey: .memberCount)
        distinct = try c.decode(Bool.self, forKey: .distinct)
        isOneToOne = try c.decode(Bool.self, forKey: .isOneToOne)
        pushFromBlockedUsers = try c.decode(Bool.self, forKey: .pushFromBlockedUsers)
        createdAt = try c.decode(Int64.self, forKey: .createdAt)
        lastMessage = try c.decodeIfPresent(Message.self, forKey: .lastMessage)
        lastActivityAt = try c.decode(Int64.self, forKey: .lastActivityAt)
        lastReadSeq = try c.decode(Int64.self, forKey: .lastReadSeq)
        unreadCount = try c.decode(Int64.self, forKey: .unreadCount)
        version = try c.decodeIfPresent(Int64.self, forKey: .version) ?? 0
        // A role this client does not know yet is left out rather than failing the channel.
        roles = (try c.decodeIfPresent([String: String].self, forKey: .roles) ?? [:])
            .compactMapValues { ChannelRole(rawValue: $0) }
        frozen = try c.decodeIfPresent(Bool.self, forKey: .frozen) ?? false
        slowModeSeconds = try c.decodeIfPresent(Int.self, forKey: .slowModeSeconds) ?? 0
        muted = try c.decodeIfPresent(Bool.self, forKey: .muted) ?? false
        bans = try c.decodeIfPresent([String: ChannelBan].self, forKey: .bans)
    }
}

/// `channel.markRead`'s answer.
public struct ReadState: Decodable, Sendable, Equatable {
    public var channelId: String
    public var lastReadSeq: Int64
    public var unreadCount: Int64
}

/// A user's presence (`presence.subscribe`, `user.presence`).
public struct Presence: Decodable, Sendable, Equatable {
    public var userId: String
    public var online: Bool
    public var lastSeenAt: Int64
}

/// One page of a list and where the next starts (nil: the last page).
public struct Page<Item: Decodable & Sendable & Equatable>: Sendable, Equatable {
    public var items: [Item]
    public var next: String?
}

/// What a block or unblock did for one user id.
public enum BlockResult: Sendable, Equatable {
    case success
    case failed(ChatClientError.Code)
}

public enum ChannelType: String, Sendable {
    case group
    case open
}

/// `user.blocked.list` directions (PROTOCOL.md §4).
public enum BlockDirection: String, Sendable {
    /// Users I blocked.
    case blockedByMe = "byMe"
    /// Users who blocked me (only where the gateway reveals it).
    case hasBlockedMe = "me"
    case both
}

/// A message's free-form `data` object.
public enum ChatData: Decodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([ChatData])
    case object([String: ChatData])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ChatData].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ChatData].self))
        }
    }

    /// As `JSONSerialization` takes it.
    var foundationValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let value): return value
        case .number(let value): return value
        case .string(let value): return value
        case .array(let values): return values.map(\.foundationValue)
        case .object(let fields): return fields.mapValues(\.foundationValue)
        }
    }
}
