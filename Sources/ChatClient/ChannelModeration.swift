import Foundation

/// A member's role in a channel (PROTOCOL.md §16). The creator is its `owner`; owners name
/// `moderator`s (`ChatClient.setRole`); everyone else is a `member`. Owners and moderators
/// freeze the channel, set its slow mode, ban and unban, delete others' messages, and send
/// when it is frozen or faster than its slow mode.
public enum ChannelRole: String, Sendable, Equatable, Hashable {
    case owner
    case moderator
    case member

    /// Owners and moderators: the ones who moderate the channel.
    public var moderates: Bool { self != .member }
}

/// A ban from one channel, as its owners and moderators see it (`Channel.bans`).
public struct ChannelBan: Decodable, Sendable, Equatable {
    /// A shadow ban: the user stays in and is answered as before, but nothing it produces
    /// reaches anyone else. Otherwise the user is out of the channel while the ban stands.
    public var shadow: Bool
    /// When the ban ends by itself (milliseconds since 1970); nil: until an unban.
    public var untilMs: Int64?

    public init(shadow: Bool, untilMs: Int64? = nil) {
        self.shadow = shadow
        self.untilMs = untilMs
    }

    /// `untilMs` as a date.
    public var until: Date? { untilMs.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
}
