/// PROTOCOL.md §9: one push event for a member with no live connection.
public struct PushEvent: Sendable, Equatable {
    public var userID: UserID
    public var message: Message

    public init(userID: UserID, message: Message) {
        self.userID = userID
        self.message = message
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
        w.endObject()
        return w.bytes
    }
}
