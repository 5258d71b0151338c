/// JSON for the objects of PROTOCOL.md §3 and the frames of §2.
public enum WireEncoding {
    /// How one viewer sees a user.
    public struct UserView: Sendable {
        public var user: User
        public var online: Bool
        public var blockedByMe: Bool
        /// nil when the gateway does not reveal it (§5 `revealBlockedBy`).
        public var hasBlockedMe: Bool?

        public init(user: User, online: Bool, blockedByMe: Bool, hasBlockedMe: Bool?) {
            self.user = user
            self.online = online
            self.blockedByMe = blockedByMe
            self.hasBlockedMe = hasBlockedMe
        }
    }

    public static func write(_ view: UserView, to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(view.user.id)
        w.key("name"); w.string(view.user.name)
        w.key("image"); w.string(view.user.image)
        w.key("metadata")
        w.beginObject()
        for key in view.user.metadata.keys.sorted() {
            w.key(key)
            w.string(view.user.metadata[key] ?? "")
        }
        w.endObject()
        w.key("online"); w.bool(view.online)
        w.key("lastSeenAt"); w.int(view.user.lastSeenAt)
        w.key("blockedByMe"); w.bool(view.blockedByMe)
        if let hasBlockedMe = view.hasBlockedMe {
            w.key("hasBlockedMe"); w.bool(hasBlockedMe)
        }
        w.endObject()
    }

    /// A message (§3, §15). Its `reactions` and `replyCount` are written as they are: the
    /// caller passes a message already adjusted for its viewer (`MessageViewer`), with that
    /// viewer's own reactions.
    public static func write(_ message: Message, ownReactions: [String] = [], to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(message.id)
        w.key("channelId"); w.string(message.channelID)
        w.key("seq"); w.int(message.seq)
        w.key("senderId"); w.string(message.senderID)
        w.key("text"); w.string(message.text)
        w.key("data")
        if let data = message.dataJSON { w.raw(data) } else { w.null() }
        w.key("clientMessageId"); w.string(message.clientMessageID)
        w.key("createdAt"); w.int(message.createdAt)
        w.key("parentSeq"); if let parent = message.parentSeq { w.int(parent) } else { w.null() }
        w.key("replyCount"); w.int(Int64(message.replyCount))
        w.key("mentionedUserIds")
        w.beginArray()
        for user in message.mentionedUserIDs { w.string(user) }
        w.endArray()
        w.key("reactions"); reactionCounts(message.reactions, to: &w)
        w.key("ownReactions")
        w.beginArray()
        for kind in ownReactions { w.string(kind) }
        w.endArray()
        w.key("editedAt"); if let at = message.editedAt { w.int(at) } else { w.null() }
        w.key("deletedAt"); if let at = message.deletedAt { w.int(at) } else { w.null() }
        w.key("version"); w.int(message.version)
        w.endObject()
    }

    /// `{kind: count}`, kinds sorted so equal counts encode alike.
    public static func reactionCounts(_ counts: [String: Int], to w: inout JSONWriter) {
        w.beginObject()
        for kind in counts.keys.sorted() {
            w.key(kind); w.int(Int64(counts[kind] ?? 0))
        }
        w.endObject()
    }

    /// A channel (§3). `memberCount` is how many members it has, which `channel.members` may
    /// not list in full (an open channel lists only its viewer).
    /// A channel (§3). Its `lastMessage` is a preview: its reactions and replies are not
    /// counted there (`{}`, 0), since they depend on who reacts and replies, which a channel
    /// list does not read.
    /// `muted` is the viewer's own mute (§16); `bans` are shown to those who moderate it.
    public static func write(_ channel: Channel, memberCount: Int? = nil, lastMessage: Message?, lastActivityAt: Milliseconds,
                             lastReadSeq: Int64 = 0, unreadCount: Int64 = 0, version: Int64 = 0, muted: Bool = false,
                             bans: [UserID: Ban]? = nil, to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(channel.id)
        w.key("type"); w.string(channel.type.rawValue)
        w.key("name"); w.string(channel.name)
        w.key("members")
        w.beginArray()
        for member in channel.members { w.string(member) }
        w.endArray()
        w.key("memberCount"); w.int(Int64(memberCount ?? channel.members.count))
        w.key("distinct"); w.bool(channel.distinct)
        w.key("isOneToOne"); w.bool(channel.isOneToOne)
        w.key("pushFromBlockedUsers"); w.bool(channel.pushFromBlockedUsers)
        w.key("createdAt"); w.int(channel.createdAt)
        w.key("lastMessage")
        if var preview = lastMessage {
            preview.reactions = [:]
            preview.replyCount = 0
            write(preview, to: &w)
        } else {
            w.null()
        }
        w.key("lastActivityAt"); w.int(lastActivityAt)
        w.key("lastReadSeq"); w.int(lastReadSeq)
        w.key("unreadCount"); w.int(unreadCount)
        w.key("version"); w.int(version)
        w.key("roles"); w.object(sortedBy: channel.namedRoles) { role, w in w.string(role.rawValue) }
        w.key("frozen"); w.bool(channel.frozen)
        w.key("slowModeSeconds"); w.int(Int64(channel.slowModeSeconds))
        w.key("muted"); w.bool(muted)
        if let bans {
            w.key("bans"); w.object(sortedBy: bans) { ban, w in ban.write(to: &w) }
        }
        w.endObject()
    }

    /// `{"id":…,"type":"ok","result":…}`; `capacity` sizes the buffer for a large result.
    public static func ok(id: JSONValue, capacity: Int = 256, result: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter(capacity: capacity)
        w.beginObject()
        w.key("id"); w.value(id)
        w.key("type"); w.string("ok")
        w.key("result")
        result(&w)
        w.endObject()
        return w.bytes
    }

    /// `{"id":…,"type":"error","error":{"code","message"[,"retryAfterMs"]}}`
    public static func error(id: JSONValue, _ error: ChatError) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("id"); w.value(id)
        w.key("type"); w.string("error")
        w.key("error")
        w.beginObject()
        w.key("code"); w.string(error.code.rawValue)
        w.key("message"); w.string(error.message)
        if let retry = error.retryAfterMs {
            w.key("retryAfterMs"); w.int(retry)
        }
        w.endObject()
        w.endObject()
        return w.bytes
    }

    /// `{"type":"event","event":NAME,"data":…}`; `capacity` sizes the buffer for large data.
    public static func event(_ name: String, capacity: Int = 384, data: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter(capacity: capacity)
        w.beginObject()
        w.key("type"); w.string("event")
        w.key("event"); w.string(name)
        w.key("data")
        data(&w)
        w.endObject()
        return w.bytes
    }
}
