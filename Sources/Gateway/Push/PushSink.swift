import ChatCore

/// PROTOCOL.md §9: one push event for a member with no live connection.
struct PushEvent: Sendable, Equatable {
    var userID: UserID
    var message: Message

    /// `{"type":"push","userId","channelId","messageId","senderId","text","createdAt"}`
    var json: [UInt8] {
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

/// Where push events go. `emit` never blocks the caller.
protocol PushSink: Sendable {
    func emit(_ events: [PushEvent])
    /// Waits until queued events are written (shutdown, tests).
    func flush()
}

struct NoPushSink: PushSink {
    func emit(_ events: [PushEvent]) {}
    func flush() {}
}
