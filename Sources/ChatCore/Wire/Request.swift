/// A decoded client request (PROTOCOL.md §2, §4).
public struct Request: Sendable, Equatable {
    /// The client's `id`, echoed in the reply; `.null` when it could not be read.
    public var id: JSONValue
    public var command: Command

    public init(id: JSONValue, command: Command) {
        self.id = id
        self.command = command
    }
}

public enum BlockDirection: String, Sendable, Equatable {
    case byMe
    case me
    case both
}

public enum Command: Sendable, Equatable {
    case me
    case userGet(UserID)
    case userList(userIDs: [UserID]?, metadataKey: String?, metadataValues: [String]?, limit: Int, cursor: String?)
    case userUpdate(name: String?, image: String?, metadata: [String: String]?)
    case userBlock([UserID])
    case userUnblock([UserID])
    case userBlockedList(direction: BlockDirection, limit: Int, search: String?, userIDs: [UserID]?, cursor: String?)
    case channelCreate(type: ChannelType, userIDs: [UserID], name: String?, distinct: Bool, pushFromBlockedUsers: Bool?)
    case channelGet(ChannelID)
    case channelList(limit: Int, cursor: String?)
    case channelInvite(ChannelID, [UserID])
    case channelJoin(ChannelID)
    case channelLeave(ChannelID)
    case channelUpdate(ChannelID, name: String?, pushFromBlockedUsers: Bool?, frozen: Bool? = nil, slowModeSeconds: Int? = nil)
    /// §16 moderation.
    case channelSetRole(ChannelID, userID: UserID, role: ChannelRole)
    case channelBan(ChannelID, userID: UserID, Ban)
    case channelUnban(ChannelID, userID: UserID)
    /// nil: `channel.unmute`.
    case channelMute(ChannelID, ChannelMute?)
    case userMute([UserID])
    case userUnmute([UserID])
    case messageFlag(ChannelID, seq: Int64, reason: String)
    /// `parentSeq`: a reply in that message's thread (§15).
    case messageSend(ChannelID, text: String, dataJSON: String?, clientMessageID: String?, parentSeq: Int64? = nil,
                     mentionedUserIDs: [UserID] = [])
    /// `cursor`, a `next` of an earlier page, stands for `beforeSeq` or `afterSeq`; `parentSeq`
    /// reads that message's thread.
    case messageHistory(ChannelID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int, cursor: String? = nil, parentSeq: Int64? = nil)
    case messageUpdate(ChannelID, seq: Int64, MessageEdit)
    case messageDelete(ChannelID, seq: Int64)
    case reactionAdd(ChannelID, seq: Int64, kind: String)
    case reactionRemove(ChannelID, seq: Int64, kind: String)
    case messageChanges(ChannelID, afterVersion: Int64, limit: Int)
    case typingStart(ChannelID)
    case typingStop(ChannelID)
    case channelMarkRead(ChannelID, seq: Int64)
    case presenceSubscribe([UserID])
    case presenceUnsubscribe([UserID])
}

extension Command {
    /// The users a request names that must exist (else `ERR_UID_NOT_FOUND`).
    public var namedUsers: [UserID] {
        switch self {
        case .userGet(let id): return [id]
        case .userList(let ids?, _, _, _, _): return ids
        case .userBlock(let ids), .userUnblock(let ids), .presenceSubscribe(let ids): return ids
        case .userMute(let ids), .userUnmute(let ids): return ids
        case .channelSetRole(_, let id, _), .channelBan(_, let id, _), .channelUnban(_, let id): return [id]
        case .channelCreate(_, let ids, _, _, _), .channelInvite(_, let ids): return ids
        default: return []
        }
    }
}

/// What a `message.update` replaces; nil fields stay as they are.
public struct MessageEdit: Sendable, Equatable {
    public var text: String?
    /// The new `data` object as JSON text; `.some(nil)` clears it.
    public var dataJSON: String??
    public var mentionedUserIDs: [UserID]?

    public init(text: String? = nil, dataJSON: String?? = nil, mentionedUserIDs: [UserID]? = nil) {
        self.text = text
        self.dataJSON = dataJSON
        self.mentionedUserIDs = mentionedUserIDs
    }
}

/// A request that could not be decoded, with whatever `id` could be read.
public struct RequestFailure: Error, Equatable, Sendable {
    public var id: JSONValue
    public var error: ChatError
}
