/// PROTOCOL.md §16: what moderators and the app's backend keep a channel in order with.

/// A member's role in a channel. The creator is `owner`; owners name moderators.
public enum ChannelRole: String, Sendable, Equatable, CaseIterable {
    case owner
    case moderator
    case member

    /// Owners and moderators: may freeze, set slow mode, ban and unban.
    public var moderates: Bool { self != .member }
}

/// A ban from one channel or from the whole app. A plain ban keeps the user out; a shadow
/// ban keeps the user in, and what it produces reaches only its own connections.
public struct Ban: Sendable, Equatable {
    public var shadow: Bool
    /// When the ban ends (absolute milliseconds); nil: until lifted.
    public var untilMs: Milliseconds?

    public init(shadow: Bool = false, untilMs: Milliseconds? = nil) {
        self.shadow = shadow
        self.untilMs = untilMs
    }

    public func isInForce(at now: Milliseconds) -> Bool { untilMs.map { now < $0 } ?? true }

    /// `{"shadow":…,"untilMs":…|null}`, as the wire, the bus and the stores show it.
    public func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("shadow"); w.bool(shadow)
        w.key("untilMs"); if let untilMs { w.int(untilMs) } else { w.null() }
        w.endObject()
    }
}

/// A member's mute of a channel: its messages still arrive and count as unread, but
/// never push.
public struct ChannelMute: Sendable, Equatable {
    /// When the mute ends (absolute milliseconds); nil: until lifted.
    public var untilMs: Milliseconds?

    public init(untilMs: Milliseconds? = nil) {
        self.untilMs = untilMs
    }

    public func isInForce(at now: Milliseconds) -> Bool { untilMs.map { now < $0 } ?? true }
}

/// A report of one message (`message.flag`), for the app's backend.
public struct Flag: Sendable, Equatable {
    /// In characters of `reason`.
    public static let maxReasonLength = 500

    /// Assigned by the store, ascending: the admin API pages by it.
    public var id: Int64
    public var channelID: ChannelID
    public var seq: Int64
    public var messageID: MessageID
    public var reporterID: UserID
    public var senderID: UserID
    public var reason: String
    public var createdAt: Milliseconds

    public init(id: Int64 = 0, channelID: ChannelID, seq: Int64, messageID: MessageID, reporterID: UserID,
                senderID: UserID, reason: String, createdAt: Milliseconds) {
        self.id = id
        self.channelID = channelID
        self.seq = seq
        self.messageID = messageID
        self.reporterID = reporterID
        self.senderID = senderID
        self.reason = reason
        self.createdAt = createdAt
    }

    /// Its fields as the admin API and the push sink show them (without `type`).
    public func writeFields(to w: inout JSONWriter) {
        w.key("channelId"); w.string(channelID)
        w.key("seq"); w.int(seq)
        w.key("messageId"); w.string(messageID)
        w.key("reporterId"); w.string(reporterID)
        w.key("senderId"); w.string(senderID)
        w.key("reason"); w.string(reason)
        w.key("createdAt"); w.int(createdAt)
    }

    /// `{"type":"flag","channelId","seq","messageId","reporterId","senderId","reason","createdAt"}`
    public var sinkJSON: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("type"); w.string("flag")
        writeFields(to: &w)
        w.endObject()
        return w.bytes
    }
}
