/// What one node tells the others over the cluster bus (PROTOCOL.md §13): a write it
/// committed, with what the store made of it (a message's `seq`). Every node applies
/// it to its own engine (`ChatEngine.replicated`) and delivers to its own connections.
///
/// On the wire: one JSON object, `{"v":1,"node":"…","n":N,"write":{…},"message":{…}}`;
/// `n` numbers the node's events (the node waits for its own event to come back before
/// it answers, so its answer follows everything the bus ordered before); the store's
/// result rides along only for messages. Every field of the models is carried,
/// so the receiving node's state equals the committing node's.
public struct BusEvent: Sendable, Equatable {
    public var node: String
    public var number: UInt64
    public var write: StoreWrite
    public var result: StoreWriteResult

    public init(node: String, number: UInt64 = 0, write: StoreWrite, result: StoreWriteResult) {
        self.node = node
        self.number = number
        self.write = write
        self.result = result
    }

    public struct DecodeError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public func encoded() -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("v"); w.int(1)
        w.key("node"); w.string(node)
        w.key("n"); w.int(Int64(bitPattern: number))
        w.key("write")
        w.beginObject()
        switch write {
        case .upsertUser(let user):
            w.key("kind"); w.string("user")
            w.key("user"); Self.write(user, to: &w)
        case .setUserDeactivated(let id, let deactivated):
            w.key("kind"); w.string("deactivated")
            w.key("userId"); w.string(id)
            w.key("deactivated"); w.bool(deactivated)
        case .createChannel(let channel):
            w.key("kind"); w.string("createChannel")
            w.key("channel"); Self.write(channel, to: &w)
        case .updateChannel(let channel):
            w.key("kind"); w.string("updateChannel")
            w.key("channel"); Self.write(channel, to: &w)
        case .insertMessage(let message):
            w.key("kind"); w.string("message")
            w.key("message"); Self.write(message, to: &w)
        case .setBlock(let blocker, let blocked, let isBlocked, let at):
            w.key("kind"); w.string("block")
            w.key("blocker"); w.string(blocker)
            w.key("blocked"); w.string(blocked)
            w.key("isBlocked"); w.bool(isBlocked)
            w.key("at"); w.int(at)
        case .markRead(let channelID, let userID, let seq):
            w.key("kind"); w.string("read")
            w.key("channelId"); w.string(channelID)
            w.key("userId"); w.string(userID)
            w.key("seq"); w.int(seq)
        case .changeMessage(let change):
            w.key("kind"); w.string("change")
            w.key("change"); Self.write(change, to: &w)
        case .insertFlag(let flag):
            w.key("kind"); w.string("flag")
            w.key("flag"); Self.write(flag, to: &w)
        }
        w.endObject()
        switch result {
        case .message(let stored):
            w.key("message"); Self.write(stored, to: &w)
        case .changed(let stored, let previousVersion):
            w.key("message"); Self.write(stored, to: &w)
            w.key("previousVersion"); w.int(previousVersion)
        case .channel(let lastSeq):
            w.key("lastSeq"); w.int(lastSeq)
        default:
            break
        }
        w.endObject()
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> BusEvent {
        let parsed: JSONValue
        do throws(JSONParseError) {
            parsed = try JSONParser.parse(bytes)
        } catch {
            throw DecodeError(description: "bus event is not JSON: \(error)")
        }
        guard let root = parsed.objectValue else { throw DecodeError(description: "bus event is not an object") }
        guard root["v"]?.int64Value == 1 else { throw DecodeError(description: "bus event version is not 1") }
        let node = try string(root, "node")
        let number = UInt64(bitPattern: try int(root, "n"))
        guard let write = root["write"]?.objectValue else { throw DecodeError(description: "bus event has no write") }
        let decoded: StoreWrite
        switch try string(write, "kind") {
        case "user": decoded = .upsertUser(try user(try object(write, "user")))
        case "deactivated": decoded = .setUserDeactivated(try string(write, "userId"), try bool(write, "deactivated"))
        case "createChannel": decoded = .createChannel(try channel(try object(write, "channel")))
        case "updateChannel": decoded = .updateChannel(try channel(try object(write, "channel")))
        case "message": decoded = .insertMessage(try message(try object(write, "message")))
        case "block":
            decoded = .setBlock(blocker: try string(write, "blocker"), blocked: try string(write, "blocked"),
                                isBlocked: try bool(write, "isBlocked"), at: try int(write, "at"))
        case "read":
            decoded = .markRead(channelID: try string(write, "channelId"), userID: try string(write, "userId"),
                                seq: try int(write, "seq"))
        case "change": decoded = .changeMessage(try change(try object(write, "change")))
        case "flag": decoded = .insertFlag(try flag(try object(write, "flag")))
        case let other: throw DecodeError(description: "unknown bus write kind \(other)")
        }
        var result = StoreWriteResult.done
        if root["lastSeq"] != nil {
            switch decoded {
            case .createChannel, .updateChannel: result = .channel(lastSeq: try int(root, "lastSeq"))
            default: throw DecodeError(description: "lastSeq on a bus event that writes no channel")
            }
        }
        if let stored = root["message"]?.objectValue {
            if case .changeMessage = decoded {
                result = .changed(try message(stored), previousVersion: try int(root, "previousVersion"))
            } else {
                result = .message(try message(stored))
            }
        }
        let event = BusEvent(node: node, number: number, write: decoded, result: result)
        if let field = event.invalidField { throw DecodeError(description: "bus event field \(field) is out of bounds") }
        return event
    }

    // MARK: models

    private static func write(_ user: User, to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(user.id)
        w.key("name"); w.string(user.name)
        w.key("image"); w.string(user.image)
        w.key("metadata")
        w.beginObject()
        for (key, value) in user.metadata.sorted(by: { $0.key < $1.key }) {
            w.key(key); w.string(value)
        }
        w.endObject()
        w.key("createdAt"); w.int(user.createdAt)
        w.key("lastSeenAt"); w.int(user.lastSeenAt)
        w.key("deactivated"); w.bool(user.deactivated)
        w.key("mutedUsers"); strings(user.mutedUsers.sorted(), to: &w)
        w.key("ban"); if let ban = user.ban { ban.write(to: &w) } else { w.null() }
        w.endObject()
    }

    private static func user(_ o: JSONObject) throws(DecodeError) -> User {
        var metadata: [String: String] = [:]
        for (key, value) in try object(o, "metadata").entries {
            guard let text = value.stringValue else { throw DecodeError(description: "metadata \(key) is not a string") }
            metadata[key] = text
        }
        return User(id: try string(o, "id"), name: try string(o, "name"), image: try string(o, "image"), metadata: metadata,
                    createdAt: try int(o, "createdAt"), lastSeenAt: try int(o, "lastSeenAt"),
                    deactivated: try bool(o, "deactivated"),
                    mutedUsers: Set(o["mutedUsers"] == nil ? [] : try strings(o["mutedUsers"])),
                    ban: try o["ban"]?.objectValue.map { (b: JSONObject) throws(DecodeError) in try ban(b) })
    }

    private static func write(_ channel: Channel, to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(channel.id)
        w.key("type"); w.string(channel.type.rawValue)
        w.key("name"); w.string(channel.name)
        w.key("members"); strings(channel.members, to: &w)
        w.key("distinct"); w.bool(channel.distinct)
        w.key("isOneToOne"); w.bool(channel.isOneToOne)
        w.key("pushFromBlockedUsers"); w.bool(channel.pushFromBlockedUsers)
        w.key("createdAt"); w.int(channel.createdAt)
        w.key("createdBy"); w.string(channel.createdBy)
        w.key("inviterViews"); w.object(sortedBy: channel.inviterViews) { members, w in strings(members, to: &w) }
        w.key("roles"); w.object(sortedBy: channel.roles) { role, w in w.string(role.rawValue) }
        w.key("frozen"); w.bool(channel.frozen)
        w.key("slowModeSeconds"); w.int(Int64(channel.slowModeSeconds))
        w.key("bans"); w.object(sortedBy: channel.bans) { ban, w in ban.write(to: &w) }
        w.key("mutes"); w.object(sortedBy: channel.mutes) { mute, w in if let until = mute.untilMs { w.int(until) } else { w.null() } }
        w.endObject()
    }

    private static func channel(_ o: JSONObject) throws(DecodeError) -> Channel {
        guard let type = ChannelType(rawValue: try string(o, "type")) else { throw DecodeError(description: "unknown channel type") }
        var views: [UserID: [UserID]] = [:]
        for (inviter, members) in try object(o, "inviterViews").entries { views[inviter] = try strings(members) }
        var roles: [UserID: ChannelRole] = [:]
        for (user, value) in o["roles"]?.objectValue?.entries ?? [] {
            guard let role = value.stringValue.flatMap(ChannelRole.init(rawValue:)) else {
                throw DecodeError(description: "role of \(user) is not a role")
            }
            roles[user] = role
        }
        var bans: [UserID: Ban] = [:]
        for (user, value) in o["bans"]?.objectValue?.entries ?? [] {
            guard let object = value.objectValue else { throw DecodeError(description: "ban of \(user) is not an object") }
            bans[user] = try ban(object)
        }
        var mutes: [UserID: ChannelMute] = [:]
        for (user, value) in o["mutes"]?.objectValue?.entries ?? [] {
            if case .null = value { mutes[user] = ChannelMute() } else {
                guard let until = value.int64Value else { throw DecodeError(description: "mute of \(user) is not a time") }
                mutes[user] = ChannelMute(untilMs: until)
            }
        }
        let slowMode = o["slowModeSeconds"]?.int64Value ?? 0
        guard slowMode >= 0, slowMode <= Int64(Int32.max) else { throw DecodeError(description: "slowModeSeconds is out of bounds") }
        return Channel(id: try string(o, "id"), type: type, name: try string(o, "name"), members: try strings(o["members"]),
                       distinct: try bool(o, "distinct"), isOneToOne: try bool(o, "isOneToOne"),
                       pushFromBlockedUsers: try bool(o, "pushFromBlockedUsers"), createdAt: try int(o, "createdAt"),
                       createdBy: try string(o, "createdBy"), inviterViews: views, roles: roles,
                       frozen: o["frozen"]?.boolValue ?? false, slowModeSeconds: Int(slowMode), bans: bans, mutes: mutes)
    }

    private static func ban(_ o: JSONObject) throws(DecodeError) -> Ban {
        Ban(shadow: try bool(o, "shadow"), untilMs: o["untilMs"]?.int64Value)
    }

    private static func write(_ flag: Flag, to w: inout JSONWriter) {
        w.beginObject()
        w.key("channelId"); w.string(flag.channelID)
        w.key("seq"); w.int(flag.seq)
        w.key("messageId"); w.string(flag.messageID)
        w.key("reporterId"); w.string(flag.reporterID)
        w.key("senderId"); w.string(flag.senderID)
        w.key("reason"); w.string(flag.reason)
        w.key("createdAt"); w.int(flag.createdAt)
        w.endObject()
    }

    private static func flag(_ o: JSONObject) throws(DecodeError) -> Flag {
        Flag(channelID: try string(o, "channelId"), seq: try int(o, "seq"), messageID: try string(o, "messageId"),
             reporterID: try string(o, "reporterId"), senderID: try string(o, "senderId"), reason: try string(o, "reason"),
             createdAt: try int(o, "createdAt"))
    }

    private static func write(_ message: Message, to w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.string(message.id)
        w.key("channelId"); w.string(message.channelID)
        w.key("seq"); w.int(message.seq)
        w.key("senderId"); w.string(message.senderID)
        w.key("text"); w.string(message.text)
        w.key("data"); w.string(message.dataJSON)
        w.key("clientMessageId"); w.string(message.clientMessageID)
        w.key("createdAt"); w.int(message.createdAt)
        w.key("hiddenFrom"); w.string(message.hiddenFrom)
        w.key("parentSeq"); if let parent = message.parentSeq { w.int(parent) } else { w.null() }
        w.key("mentionedUserIds"); strings(message.mentionedUserIDs, to: &w)
        w.key("editedAt"); if let at = message.editedAt { w.int(at) } else { w.null() }
        w.key("deletedAt"); if let at = message.deletedAt { w.int(at) } else { w.null() }
        w.key("version"); w.int(message.version)
        w.key("reactions"); WireEncoding.reactionCounts(message.reactions, to: &w)
        w.key("replyCount"); w.int(Int64(message.replyCount))
        w.endObject()
    }

    private static func message(_ o: JSONObject) throws(DecodeError) -> Message {
        var reactions: [String: Int] = [:]
        for (kind, value) in o["reactions"]?.objectValue?.entries ?? [] {
            guard let count = value.int64Value, count > 0, count <= Int64(Int32.max) else {
                throw DecodeError(description: "reaction count of \(kind) is not a positive integer")
            }
            reactions[kind] = Int(count)
        }
        let replyCount = o["replyCount"]?.int64Value ?? 0
        guard replyCount >= 0, replyCount <= Int64(Int32.max) else { throw DecodeError(description: "replyCount is out of bounds") }
        return Message(id: try string(o, "id"), channelID: try string(o, "channelId"), seq: try int(o, "seq"),
                       senderID: try string(o, "senderId"), text: try string(o, "text"), dataJSON: o["data"]?.stringValue,
                       clientMessageID: o["clientMessageId"]?.stringValue, createdAt: try int(o, "createdAt"),
                       hiddenFrom: o["hiddenFrom"]?.stringValue, parentSeq: o["parentSeq"]?.int64Value,
                       mentionedUserIDs: o["mentionedUserIds"] == nil ? [] : try strings(o["mentionedUserIds"]),
                       editedAt: o["editedAt"]?.int64Value, deletedAt: o["deletedAt"]?.int64Value,
                       version: o["version"]?.int64Value ?? 0, reactions: reactions, replyCount: Int(replyCount))
    }

    private static func write(_ change: MessageChange, to w: inout JSONWriter) {
        w.beginObject()
        w.key("channelId"); w.string(change.channelID)
        w.key("seq"); w.int(change.seq)
        w.key("actor"); w.string(change.actor)
        w.key("at"); w.int(change.at)
        switch change.action {
        case .edit(let text, let dataJSON, let mentions, let hideFrom):
            w.key("action"); w.string("edit")
            w.key("text"); w.string(text)
            w.key("data"); w.string(dataJSON)
            w.key("mentionedUserIds"); strings(mentions, to: &w)
            w.key("hideFrom"); w.string(hideFrom)
        case .delete:
            w.key("action"); w.string("delete")
        case .addReaction(let kind):
            w.key("action"); w.string("addReaction")
            w.key("kind"); w.string(kind)
        case .removeReaction(let kind):
            w.key("action"); w.string("removeReaction")
            w.key("kind"); w.string(kind)
        }
        w.endObject()
    }

    private static func change(_ o: JSONObject) throws(DecodeError) -> MessageChange {
        let action: MessageChange.Action
        switch try string(o, "action") {
        case "edit":
            action = .edit(text: try string(o, "text"), dataJSON: o["data"]?.stringValue,
                           mentionedUserIDs: try strings(o["mentionedUserIds"]), hideFrom: o["hideFrom"]?.stringValue)
        case "delete": action = .delete
        case "addReaction": action = .addReaction(try string(o, "kind"))
        case "removeReaction": action = .removeReaction(try string(o, "kind"))
        case let other: throw DecodeError(description: "unknown change action \(other)")
        }
        return MessageChange(channelID: try string(o, "channelId"), seq: try int(o, "seq"), actor: try string(o, "actor"),
                             at: try int(o, "at"), action: action)
    }

    // MARK: fields

    private static func strings(_ values: [String], to w: inout JSONWriter) {
        w.beginArray()
        for value in values { w.string(value) }
        w.endArray()
    }

    private static func strings(_ value: JSONValue?) throws(DecodeError) -> [String] {
        guard let array = value?.arrayValue else { throw DecodeError(description: "expected an array of strings") }
        var result: [String] = []
        for element in array {
            guard let text = element.stringValue else { throw DecodeError(description: "expected a string in an array") }
            result.append(text)
        }
        return result
    }

    private static func object(_ o: JSONObject, _ key: String) throws(DecodeError) -> JSONObject {
        guard let value = o[key]?.objectValue else { throw DecodeError(description: "\(key) is not an object") }
        return value
    }

    private static func string(_ o: JSONObject, _ key: String) throws(DecodeError) -> String {
        guard let value = o[key]?.stringValue else { throw DecodeError(description: "\(key) is not a string") }
        return value
    }

    private static func int(_ o: JSONObject, _ key: String) throws(DecodeError) -> Int64 {
        guard let value = o[key]?.int64Value else { throw DecodeError(description: "\(key) is not an integer") }
        return value
    }

    private static func bool(_ o: JSONObject, _ key: String) throws(DecodeError) -> Bool {
        guard let value = o[key]?.boolValue else { throw DecodeError(description: "\(key) is not a boolean") }
        return value
    }
}
