/// PROTOCOL.md §9: one push event for a member with no live connection.
public struct PushEvent: Sendable, Equatable {
    public var userID: UserID
    public var message: Message
    /// The message mentions the user (§15): apps may notify louder. A mention never adds a
    /// push that a plain message would not get (§5).
    public var mentioned: Bool

    public init(userID: UserID, message: Message, mentioned: Bool = false) {
        self.userID = userID
        self.message = message
        self.mentioned = mentioned
    }

    /// `{"type":"push","userId","channelId","messageId","senderId","text","createdAt"}`
    public var json: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("type"); w.string("push")
        w.key("userId"); w.string(userID)
        w.key("channelId"); w.string(message.channelID)
        w.key("messageId"); w.string(message.id)
        w.key("senderId"); w.string(message.senderID)
        w.key("text"); w.string(message.text)
        w.key("createdAt"); w.int(message.createdAt)
        if let parent = message.parentSeq {
            w.key("parentSeq"); w.int(parent)
        }
        if mentioned {
            w.key("mentioned"); w.bool(true)
        }
        w.endObject()
        return w.bytes
    }
}
