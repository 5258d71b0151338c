import ChatCore
import Storage

extension ChatService {
    func writeChannel(_ channel: Channel, for viewer: UserID, to w: inout JSONWriter) {
        WireEncoding.write(channel.seen(by: viewer), lastMessage: directory.lastMessage(of: channel.id, for: viewer),
                           lastActivityAt: directory.lastActivity(of: channel, for: viewer), to: &w)
    }

    /// `channel.updated` to every member but the requesting session; one encoding
    /// per distinct view (only 1-to-1 channels with hidden messages, and inviters whose
    /// invitees blocked them, see their own).
    func announce(_ channel: Channel, excluding session: ChatSession?) {
        var byView: [String: [UserID]] = [:]
        for member in channel.members {
            let lastSeen = directory.lastMessage(of: channel.id, for: member)?.id ?? ""
            let members = channel.inviterViews[member] == nil ? "" : "\u{1E}" + member
            byView[lastSeen + members, default: []].append(member)
        }
        for members in byView.values {
            guard let viewer = members.first else { continue }
            let event = SharedEvent(payload: WireEncoding.event("channel.updated") { writeChannel(channel, for: viewer, to: &$0) })
            publish(event, toUsers: members, excluding: session)
        }
    }

    func channelCreate(id: JSONValue, session: ChatSession, type: ChannelType, invitees: [UserID], name: String?,
                       distinct: Bool, push: Bool?) throws(ChatError) {
        let user = session.userID
        let now = clock.now()
        let channel: Channel
        switch type {
        case .group:
            let invited = sortInvitees(invitees, inviter: user)
            let created = try directory.createGroup(
                id: ids.make(prefix: "c_", at: now), creator: user,
                members: [user] + invitees.filter { invited.admitted.contains($0) || invited.declined.contains($0) },
                declined: invited.declined, name: name ?? "",
                distinct: distinct, pushFromBlockedUsers: push ?? false, now: now)
            guard created.created else {
                let existing = created.channel
                reply(session, id: id) { writeChannel(existing, for: user, to: &$0) }
                return
            }
            channel = created.channel
        case .open:
            channel = directory.createOpen(id: ids.make(prefix: "c_", at: now), creator: user, name: name ?? "",
                                           pushFromBlockedUsers: push ?? false, now: now)
        }
        addToHub(channel.members, channel: channel.id)
        persistChannelChange(.createChannel(channel), channel: channel, session: session, id: id)
    }

    func channelList(id: JSONValue, session: ChatSession, limit: Int, cursor: String?) throws(ChatError) {
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

    func channelInvite(id: JSONValue, session: ChatSession, channelID: ChannelID, invitees: [UserID]) throws(ChatError) {
        for invitee in invitees { _ = try directory.user(invitee) }
        let invited = sortInvitees(invitees, inviter: session.userID)
        let result = try directory.invite(
            channelID, by: session.userID,
            users: invitees.filter { invited.admitted.contains($0) || invited.declined.contains($0) }, declined: invited.declined)
        guard !result.added.isEmpty || result.inviterViewChanged else {
            let channel = result.channel
            reply(session, id: id) { writeChannel(channel, for: session.userID, to: &$0) }
            return
        }
        addToHub(result.added, channel: channelID)
        persistChannelChange(.updateChannel(result.channel), channel: result.channel, session: session, id: id)
    }

    func channelJoin(id: JSONValue, session: ChatSession, channelID: ChannelID) throws(ChatError) {
        let before = try directory.visibleChannel(channelID, to: session.userID)
        let channel = try directory.join(channelID, user: session.userID)
        guard channel.members != before.members else {
            reply(session, id: id) { writeChannel(channel, for: session.userID, to: &$0) }
            return
        }
        addToHub([session.userID], channel: channelID)
        persistChannelChange(.updateChannel(channel), channel: channel, session: session, id: id)
    }

    func channelLeave(id: JSONValue, session: ChatSession, channelID: ChannelID) throws(ChatError) {
        let channel = try directory.leave(channelID, user: session.userID)
        let user = session.userID
        forEachShard { $0.remove(users: [user], from: channelID) }
        let box = UncheckedBox(session)
        persist(.updateChannel(channel)) { [self] outcome in
            guard case .success = outcome else {
                reply(box.value, id: id, error: ChatError(.internalError, "storage failed; retry"))
                return
            }
            reply(box.value, id: id) { w in
                w.beginObject()
                w.endObject()
            }
            announce(channel, excluding: nil)
        }
    }

    func channelUpdate(id: JSONValue, session: ChatSession, channelID: ChannelID, name: String?, push: Bool?) throws(ChatError) {
        let channel = try directory.update(channelID, by: session.userID, name: name, pushFromBlockedUsers: push)
        persistChannelChange(.updateChannel(channel), channel: channel, session: session, id: id)
    }

    /// Makes the hub deliver `channel` to these users' live sessions.
    func addToHub(_ users: [UserID], channel: ChannelID) {
        forEachShard { $0.add(users: users, to: channel) }
    }

    /// Persists a channel change, replies with the channel, then tells the other members.
    func persistChannelChange(_ write: StoreWrite, channel: Channel, session: ChatSession?, id: JSONValue) {
        let box = session.map(UncheckedBox.init)
        persist(write) { [self] outcome in
            guard let session = box?.value else {
                if case .success = outcome { announce(channel, excluding: nil) }
                return
            }
            guard case .success = outcome else {
                reply(session, id: id, error: ChatError(.internalError, "storage failed; retry"))
                return
            }
            reply(session, id: id) { writeChannel(channel, for: session.userID, to: &$0) }
            announce(channel, excluding: session)
        }
    }
}
