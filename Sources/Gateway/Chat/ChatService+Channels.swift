import ChatCore
import Storage

extension ChatService {
    func writeChannel(_ channel: Channel, for viewer: UserID, to w: inout JSONWriter) {
        w.raw(bytes: engine.encode(channel, for: viewer))
    }

    /// `channel.updated` to every member but `session` (the admin API's changes).
    func announce(_ channel: Channel, excluding session: SessionRecord?) {
        run(engine.announce(channel, excluding: session?.id))
    }

    /// `channel.create` / `invite` / `join` / `leave` / `update`, decided by the engine.
    func changeChannel(_ command: ChannelCommand, id: JSONValue, session: SessionRecord) {
        run(engine.changeChannel(command, by: session.userID, for: .session(session.id, requestID: id), now: clock.now()))
    }

    /// The same from the admin API.
    func changeChannel(_ command: ChannelCommand, respond: @escaping @Sendable (EngineReply) -> Void) {
        lastAdminCall += 1
        adminReplies[lastAdminCall] = respond
        run(engine.changeChannel(command, by: "", for: .admin(lastAdminCall), now: clock.now()))
    }

    func channelList(id: JSONValue, session: SessionRecord, limit: Int, cursor: String?) throws(ChatError) {
        var after: (activity: Milliseconds, id: ChannelID)?
        if let cursor {
            let fields = try cursors.open(cursor, fieldCount: 3)
            guard fields[0] == "channels", let activity = Milliseconds(fields[1]) else {
                throw ChatError(.invalidCursor, "cursor is for another list")
            }
            after = (activity, fields[2])
        }
        let user = session.userID
        let page = directory.listChannels(of: user, limit: limit, after: after)
        let next = page.next.map { cursors.seal(["channels", String($0.activity), $0.id]) }
        reply(session, id: id) { w in
            w.beginObject()
            w.key("channels")
            w.beginArray()
            for channel in page.channels { writeChannel(channel, for: user, to: &w) }
            w.endArray()
            w.key("next"); w.string(next)
            w.endObject()
        }
    }

    /// Makes the hub deliver `channel` to these users' live sessions.
    func addToHub(_ users: [UserID], channel: ChannelID) {
        forEachShard { $0.add(users: users, to: channel) }
    }
}
