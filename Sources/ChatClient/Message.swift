/// A message (PROTOCOL.md §3) with its lifecycle (§15), as the viewer sees it.
public struct Message: Decodable, Sendable, Equatable {
    public var id: String
    public var channelId: String
    public var seq: Int64
    public var senderId: String
    public var text: String
    public var data: ChatData?
    public var clientMessageId: String?
    public var createdAt: Int64
    // The message lifecycle (v1.2, §15), as this user sees it; the defaults are what a gateway
    // before v1.2 means by leaving the fields out.
    /// The thread's parent when this message is a reply.
    public var parentSeq: Int64? = nil
    /// Replies in this message's thread that this user can see.
    public var replyCount: Int64 = 0
    public var mentionedUserIds: [String] = []
    /// Reaction kind → how many users reacted with it (that this user's blocks let count).
    public var reactions: [String: Int64] = [:]
    /// The kinds this user reacted with.
    public var ownReactions: [String] = []
    public var editedAt: Int64? = nil
    /// Set on a tombstone: `text` is empty, `data` null, mentions and reactions cleared.
    public var deletedAt: Int64? = nil
    /// The channel version of this message's latest change.
    public var version: Int64 = 0

    public var isReply: Bool { parentSeq != nil }
    public var isEdited: Bool { editedAt != nil }
    public var isDeleted: Bool { deletedAt != nil }
}

extension Message {
    enum CodingKeys: String, CodingKey {
        case id, channelId, seq, senderId, text, data, clientMessageId, createdAt
        case parentSeq, replyCount, mentionedUserIds, reactions, ownReactions, editedAt, deletedAt, version
    }

    /// The §15 fields are read where present, so messages of a gateway before v1.2 decode too.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        channelId = try c.decode(String.self, forKey: .channelId)
        seq = try c.decode(Int64.self, forKey: .seq)
        senderId = try c.decode(String.self, forKey: .senderId)
        text = try c.decode(String.self, forKey: .text)
        data = try c.decodeIfPresent(ChatData.self, forKey: .data)
        clientMessageId = try c.decodeIfPresent(String.self, forKey: .clientMessageId)
        createdAt = try c.decode(Int64.self, forKey: .createdAt)
        parentSeq = try c.decodeIfPresent(Int64.self, forKey: .parentSeq)
        replyCount = try c.decodeIfPresent(Int64.self, forKey: .replyCount) ?? 0
        mentionedUserIds = try c.decodeIfPresent([String].self, forKey: .mentionedUserIds) ?? []
        reactions = try c.decodeIfPresent([String: Int64].self, forKey: .reactions) ?? [:]
        ownReactions = try c.decodeIfPresent([String].self, forKey: .ownReactions) ?? []
        editedAt = try c.decodeIfPresent(Int64.self, forKey: .editedAt)
        deletedAt = try c.decodeIfPresent(Int64.self, forKey: .deletedAt)
        version = try c.decodeIfPresent(Int64.self, forKey: .version) ?? 0
    }

    /// This message with a live reaction change folded in: the counts the event carries and,
    /// when `ownUserID` reacted, its own kinds. A tombstone keeps no reactions, so an event
    /// that was on its way when the message was deleted changes nothing.
    public func applying(_ update: ReactionUpdate, ownUserID: String?) -> Message {
        guard update.channelId == channelId, update.seq == seq, !isDeleted else { return self }
        var changed = self
        changed.reactions = update.reactions.filter { $0.value > 0 }
        if let ownUserID, update.userId == ownUserID {
            changed.ownReactions.removeAll { $0 == update.kind }
            if update.added { changed.ownReactions.append(update.kind) }
        }
        return changed
    }
}
