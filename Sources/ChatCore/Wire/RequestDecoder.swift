/// Turns a text message into a `Request`, or the error reply it deserves
/// (`ERR_BAD_REQUEST`, `ERR_UNKNOWN_TYPE`, `ERR_INVALID_LIMIT`, `ERR_TOO_MANY_IDS`).
public enum RequestDecoder {
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> Result<Request, RequestFailure> {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            return .failure(RequestFailure(id: .null, error: ChatError(.badRequest, "not JSON: \(error)")))
        }
        guard case .object(let object) = document else {
            return .failure(RequestFailure(id: .null, error: ChatError(.badRequest, "a request is a JSON object")))
        }
        var id = object["id"] ?? .null
        switch id {
        case .number, .string, .null: break
        default: id = .null
        }
        do throws(ChatError) {
            guard let typeValue = object["type"] else { throw ChatError(.badRequest, "missing field type") }
            guard case .string(let type) = typeValue else { throw ChatError(.badRequest, "field type must be a string") }
            // Parameters sit beside `type`, or inside a `params` object, which is the
            // only way to give `channel.create` its own `type` (else: `channelType`).
            var fields = JSONFields(object: object)
            switch object["params"] {
            case nil, .null?: break
            case .object(let params)?: fields = JSONFields(object: params)
            default: throw ChatError(.badRequest, "field params must be an object")
            }
            return .success(Request(id: id, command: try command(type, fields, envelope: object)))
        } catch {
            return .failure(RequestFailure(id: id, error: error))
        }
    }

    public static func decode(_ bytes: [UInt8]) -> Result<Request, RequestFailure> {
        bytes.withUnsafeBytes { decode($0) }
    }

    private static func command(_ type: String, _ f: JSONFields, envelope: JSONObject) throws(ChatError) -> Command {
        switch type {
        case "me":
            return .me
        case "user.get":
            return .userGet(try f.requiredString("userId"))
        case "user.list":
            let ids = try f.stringArray("userIds")
            if let ids, ids.count > 250 { throw ChatError(.tooManyIDs, "userIds holds more than 250 ids") }
            let key = try f.string("metadataKey")
            let values = try f.stringArray("metadataValues")
            if (key == nil) != (values == nil) {
                throw ChatError(.badRequest, "metadataKey and metadataValues go together")
            }
            return .userList(userIDs: ids, metadataKey: key, metadataValues: values,
                             limit: try f.limit(), cursor: try f.string("cursor"))
        case "user.update":
            return .userUpdate(name: try f.string("name"), image: try f.string("image"), metadata: try f.stringMap("metadata"))
        case "typing.start":
            return .typingStart(try f.requiredString("channelId"))
        case "typing.stop":
            return .typingStop(try f.requiredString("channelId"))
        case "channel.markRead":
            guard let seq = try f.int("seq") else { throw ChatError(.badRequest, "missing field seq") }
            if seq < 0 { throw ChatError(.badRequest, "seq must not be negative") }
            return .channelMarkRead(try f.requiredString("channelId"), seq: seq)
        case "presence.subscribe":
            return .presenceSubscribe(try blockIDs(f))
        case "presence.unsubscribe":
            return .presenceUnsubscribe(try blockIDs(f))
        case "user.block":
            return .userBlock(try blockIDs(f))
        case "user.unblock":
            return .userUnblock(try blockIDs(f))
        case "user.blocked.list":
            let directionText = try f.string("direction") ?? "byMe"
            guard let direction = BlockDirection(rawValue: directionText) else {
                throw ChatError(.badRequest, "direction must be byMe, me or both")
            }
            return .userBlockedList(direction: direction, limit: try f.limit(), search: try f.string("search"),
                                    userIDs: try f.stringArray("userIds"), cursor: try f.string("cursor"))
        case "channel.create":
            let usesParams = f.object != envelope
            var typeName = try f.string("channelType")
            if typeName == nil && usesParams { typeName = try f.string("type") }
            guard let type = ChannelType(rawValue: typeName ?? "group") else {
                throw ChatError(.badRequest, "channel type must be group or open")
            }
            return .channelCreate(type: type, userIDs: try f.stringArray("userIds") ?? [], name: try f.string("name"),
                                  distinct: try f.bool("distinct") ?? false,
                                  pushFromBlockedUsers: try f.bool("pushFromBlockedUsers"))
        case "channel.get":
            return .channelGet(try f.requiredString("channelId"))
        case "channel.list":
            return .channelList(limit: try f.limit(), cursor: try f.string("cursor"))
        case "channel.invite":
            guard let ids = try f.stringArray("userIds"), !ids.isEmpty else {
                throw ChatError(.badRequest, "userIds must list at least one user")
            }
            if ids.count > 100 { throw ChatError(.tooManyIDs, "userIds holds more than 100 ids") }
            return .channelInvite(try f.requiredString("channelId"), ids)
        case "channel.join":
            return .channelJoin(try f.requiredString("channelId"))
        case "channel.leave":
            return .channelLeave(try f.requiredString("channelId"))
        case "channel.update":
            var slowMode: Int?
            if let seconds = try f.int("slowModeSeconds") {
                guard seconds >= 0, seconds <= Int64(ChatEngine.maxSlowModeSeconds) else {
                    throw ChatError(.badRequest, "slowModeSeconds must be 0 to \(ChatEngine.maxSlowModeSeconds)")
                }
                slowMode = Int(seconds)
            }
            return .channelUpdate(try f.requiredString("channelId"), name: try f.string("name"),
                                  pushFromBlockedUsers: try f.bool("pushFromBlockedUsers"), frozen: try f.bool("frozen"),
                                  slowModeSeconds: slowMode)
        case "channel.setRole":
            let roleText = try f.requiredString("role")
            guard let role = ChannelRole(rawValue: roleText), role != .owner else {
                throw ChatError(.badRequest, "role must be moderator or member")
            }
            return .channelSetRole(try f.requiredString("channelId"), userID: try f.requiredString("userId"), role: role)
        case "channel.ban":
            return .channelBan(try f.requiredString("channelId"), userID: try f.requiredString("userId"),
                               Ban(shadow: try f.bool("shadow") ?? false, untilMs: try f.time("untilMs")))
        case "channel.unban":
            return .channelUnban(try f.requiredString("channelId"), userID: try f.requiredString("userId"))
        case "channel.mute":
            return .channelMute(try f.requiredString("channelId"), ChannelMute(untilMs: try f.time("untilMs")))
        case "channel.unmute":
            return .channelMute(try f.requiredString("channelId"), nil)
        case "user.mute":
            return .userMute(try blockIDs(f))
        case "user.unmute":
            return .userUnmute(try blockIDs(f))
        case "message.flag":
            let reason = try f.string("reason") ?? ""
            if reason.count > Flag.maxReasonLength {
                throw ChatError(.badRequest, "reason is longer than \(Flag.maxReasonLength) characters")
            }
            return .messageFlag(try f.requiredString("channelId"), seq: try f.requiredSeq("seq"), reason: reason)
        case "message.send":
            let text = try f.requiredString("text")
            if text.isEmpty { throw ChatError(.badRequest, "text must not be empty") }
            return .messageSend(try f.requiredString("channelId"), text: text, dataJSON: try f.dataObject() ?? nil,
                                clientMessageID: try f.string("clientMessageId"), parentSeq: try f.seq("parentSeq"),
                                mentionedUserIDs: try f.mentions() ?? [])
        case "message.update":
            let text = try f.string("text")
            if text?.isEmpty == true { throw ChatError(.badRequest, "text must not be empty") }
            let edit = MessageEdit(text: text, dataJSON: try f.dataObject(), mentionedUserIDs: try f.mentions())
            if edit == MessageEdit() { throw ChatError(.badRequest, "give text, data or mentionedUserIds to change") }
            return .messageUpdate(try f.requiredString("channelId"), seq: try f.requiredSeq("seq"), edit)
        case "message.delete":
            return .messageDelete(try f.requiredString("channelId"), seq: try f.requiredSeq("seq"))
        case "reaction.add":
            return .reactionAdd(try f.requiredString("channelId"), seq: try f.requiredSeq("seq"), kind: try f.reactionKind())
        case "reaction.remove":
            return .reactionRemove(try f.requiredString("channelId"), seq: try f.requiredSeq("seq"), kind: try f.reactionKind())
        case "message.changes":
            guard let after = try f.int("afterVersion"), after >= 0 else {
                throw ChatError(.badRequest, "afterVersion must be an integer of at least 0")
            }
            return .messageChanges(try f.requiredString("channelId"), afterVersion: after, limit: try f.limit())
        case "message.history":
            let before = try f.int("beforeSeq")
            let after = try f.int("afterSeq")
            if before != nil && after != nil { throw ChatError(.badRequest, "give beforeSeq or afterSeq, not both") }
            let cursor = try f.string("cursor")
            if cursor != nil && (before != nil || after != nil) {
                throw ChatError(.badRequest, "give a cursor or beforeSeq/afterSeq, not both")
            }
            return .messageHistory(try f.requiredString("channelId"), beforeSeq: before, afterSeq: after, limit: try f.limit(),
                                   cursor: cursor, parentSeq: try f.seq("parentSeq"))
        default:
            throw ChatError(.unknownType, "unknown request type \(type)")
        }
    }

    /// `userIds`: 1 to 100 users (blocks, presence).
    private static func blockIDs(_ f: JSONFields) throws(ChatError) -> [UserID] {
        guard let ids = try f.stringArray("userIds"), !ids.isEmpty else {
            throw ChatError(.badRequest, "userIds must list 1 to 100 users")
        }
        if ids.count > 100 { throw ChatError(.tooManyIDs, "userIds holds more than 100 ids") }
        return ids
    }
}

/// Typed access to request fields; a present field of the wrong type is ERR_BAD_REQUEST.
/// No string may hold U+0000: PostgreSQL cannot store it in text, and the gateway refuses
/// it on both backends alike, in every field, before anything is written.
public struct JSONFields: Sendable {
    public let object: JSONObject

    public init(object: JSONObject) {
        self.object = object
    }

    public func string(_ name: String) throws(ChatError) -> String? {
        switch object[name] {
        case nil, .null?: return nil
        case .string(let value)?: return try Self.storable(value, name)
        default: throw ChatError(.badRequest, "field \(name) must be a string")
        }
    }

    public func requiredString(_ name: String) throws(ChatError) -> String {
        guard let value = try string(name) else { throw ChatError(.badRequest, "missing field \(name)") }
        return value
    }

    /// `value` unless it holds U+0000. Parsed strings are native, so the scan runs over
    /// their contiguous bytes rather than through the generic `String.UTF8View` iterator.
    static func storable(_ value: String, _ name: String) throws(ChatError) -> String {
        let holdsNUL = value.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? value.utf8.contains(0)
        if holdsNUL { throw ChatError(.badRequest, "field \(name) must not contain U+0000") }
        return value
    }

    public func bool(_ name: String) throws(ChatError) -> Bool? {
        switch object[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw ChatError(.badRequest, "field \(name) must be true or false")
        }
    }

    public func int(_ name: String) throws(ChatError) -> Int64? {
        switch object[name] {
        case nil, .null?: return nil
        case let value?:
            guard let int = value.int64Value else { throw ChatError(.badRequest, "field \(name) must be an integer") }
            return int
        }
    }

    /// A message's `seq`: at least 1.
    public func seq(_ name: String) throws(ChatError) -> Int64? {
        guard let value = try int(name) else { return nil }
        guard value >= 1 else { throw ChatError(.badRequest, "field \(name) must be a seq of at least 1") }
        return value
    }

    /// An absolute time in milliseconds (`untilMs`): from 0 to the year 9999.
    public func time(_ name: String) throws(ChatError) -> Milliseconds? {
        guard let value = try int(name) else { return nil }
        guard value >= 0, value <= Self.latestTime else {
            throw ChatError(.badRequest, "field \(name) must be milliseconds since 1970, at most \(Self.latestTime)")
        }
        return value
    }

    /// 9999-12-31T23:59:59.999Z.
    public static let latestTime: Milliseconds = 253_402_300_799_999

    public func requiredSeq(_ name: String) throws(ChatError) -> Int64 {
        guard let value = try seq(name) else { throw ChatError(.badRequest, "missing field \(name)") }
        return value
    }

    /// `data`: absent (nil), null (`.some(nil)`) or an object, as JSON text.
    public func dataObject() throws(ChatError) -> String?? {
        switch object["data"] {
        case nil: return nil
        case .null?: return .some(nil)
        case .object(let data)?: return .some(JSONValue.object(data).jsonText)
        default: throw ChatError(.badRequest, "field data must be an object")
        }
    }

    /// A reaction's `kind`: 1 to 64 UTF-8 bytes, no control characters (§15).
    public func reactionKind() throws(ChatError) -> String {
        let kind = try requiredString("kind")
        guard MessageChange.isReactionKind(kind) else {
            throw ChatError(.badRequest, "kind must be 1 to 64 bytes without control characters")
        }
        return kind
    }

    /// `mentionedUserIds`: at most 25, counted before non-members are dropped (§15).
    public func mentions() throws(ChatError) -> [UserID]? {
        guard let ids = try stringArray("mentionedUserIds") else { return nil }
        if ids.count > 25 { throw ChatError(.tooManyIDs, "mentionedUserIds holds more than 25 ids") }
        return ids
    }

    /// `limit`: 1–100, default 20.
    public func limit() throws(ChatError) -> Int {
        guard let value = try int("limit") else { return 20 }
        guard (1...100).contains(value) else { throw ChatError(.invalidLimit, "limit must be 1 to 100") }
        return Int(value)
    }

    public func stringArray(_ name: String) throws(ChatError) -> [String]? {
        switch object[name] {
        case nil, .null?: return nil
        case .array(let elements)?:
            var result: [String] = []
            result.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let value) = element else {
                    throw ChatError(.badRequest, "field \(name) must be an array of strings")
                }
                result.append(try Self.storable(value, name))
            }
            return result
        default:
            throw ChatError(.badRequest, "field \(name) must be an array of strings")
        }
    }

    public func stringMap(_ name: String) throws(ChatError) -> [String: String]? {
        switch object[name] {
        case nil, .null?: return nil
        case .object(let map)?:
            var result: [String: String] = [:]
            for (key, value) in map.entries {
                guard case .string(let text) = value else {
                    throw ChatError(.badRequest, "field \(name) must map strings to strings")
                }
                result[try Self.storable(key, name)] = try Self.storable(text, name)
            }
            return result
        default:
            throw ChatError(.badRequest, "field \(name) must be an object")
        }
    }
}
