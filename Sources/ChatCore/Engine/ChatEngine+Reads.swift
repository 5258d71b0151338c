/// Requests that change nothing (PROTOCOL.md §4): answered from the directory at once,
/// each as its encoded result object. Lists page with cursors sealed by `cursors`.
extension ChatEngine {
    /// `me`: the caller and the ids it blocked.
    public func me(_ user: UserID) throws(ChatError) -> [UInt8] {
        let view = userView(try directory.user(user), for: user)
        let blocked = directory.blocks.blocked(by: user).sorted()
        var w = JSONWriter()
        w.beginObject()
        w.key("user"); WireEncoding.write(view, to: &w)
        w.key("blockedUserIds")
        w.beginArray()
        for other in blocked { w.string(other) }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// `user.get`.
    public func user(_ target: UserID, seenBy viewer: UserID) throws(ChatError) -> [UInt8] {
        encode(userView(try directory.user(target), for: viewer))
    }

    /// `user.list`: by ids or a metadata value, sorted by id, paged.
    public func listUsers(ids: [UserID]?, metadataKey: String?, metadataValues: [String]?, limit: Int, cursor: String?,
                          seenBy viewer: UserID) throws(ChatError) -> [UInt8] {
        let after = try cursor.map { (text) throws(ChatError) in try cursors.open(text, fieldCount: 2) }
        if let after, after[0] != "users" { throw ChatError(.invalidCursor, "cursor is for another list") }
        let page = directory.listUsers(ids: ids, metadataKey: metadataKey, metadataValues: metadataValues, limit: limit,
                                       afterID: after?[1])
        return Self.userPage(page.users.map { userView($0, for: viewer) }, next: page.next.map { cursors.seal(["users", $0]) })
    }

    /// `user.blocked.list` (and the admin API's, which may see every direction: `revealed`):
    /// users sorted by id, filtered, paged with a sealed cursor.
    public func blockedUsers(of user: UserID, direction: BlockDirection, limit: Int, search: String?, userIDs: [UserID]?,
                             cursor: String?, revealed: Bool = false) throws(ChatError) -> [UInt8] {
        if direction != .byMe && !(settings.revealBlockedBy || revealed) {
            throw ChatError(.forbidden, "who blocked you is not revealed")
        }
        var after: UserID?
        if let cursor {
            let fields = try cursors.open(cursor, fieldCount: 3)
            guard fields[0] == "blocked", fields[1] == direction.rawValue else {
                throw ChatError(.invalidCursor, "cursor is for another list")
            }
            after = fields[2]
        }
        var ids: Set<UserID>
        switch direction {
        case .byMe: ids = directory.blocks.blocked(by: user)
        case .me: ids = directory.blocks.blockers(of: user)
        case .both: ids = directory.blocks.blocked(by: user).union(directory.blocks.blockers(of: user))
        }
        if let userIDs { ids.formIntersection(userIDs) }
        let prefix = search?.lowercased()
        var users = ids.compactMap { directory.users[$0] }.filter { candidate in
            guard let prefix, !prefix.isEmpty else { return true }
            return candidate.id.lowercased().hasPrefix(prefix) || candidate.name.lowercased().hasPrefix(prefix)
        }
        users.sort { $0.id < $1.id }
        if let after { users = users.filter { $0.id > after } }
        let page = Array(users.prefix(limit))
        let next = users.count > limit ? page.last.map { cursors.seal(["blocked", direction.rawValue, $0.id]) } : nil
        return Self.userPage(page.map { userView($0, for: user) }, next: next)
    }

    /// `channel.get`.
    public func channel(_ id: ChannelID, seenBy viewer: UserID) throws(ChatError) -> [UInt8] {
        encode(try directory.visibleChannel(id, to: viewer), for: viewer)
    }

    /// `channel.list`: the caller's channels, newest activity first, paged.
    public func listChannels(of user: UserID, limit: Int, cursor: String?) throws(ChatError) -> [UInt8] {
        var after: (activity: Milliseconds, id: ChannelID)?
        if let cursor {
            let fields = try cursors.open(cursor, fieldCount: 3)
            guard fields[0] == "channels", let activity = Milliseconds(fields[1]) else {
                throw ChatError(.invalidCursor, "cursor is for another list")
            }
            after = (activity, fields[2])
        }
        let page = directory.listChannels(of: user, limit: limit, after: after)
        let next = page.next.map { cursors.seal(["channels", String($0.activity), $0.id]) }
        var w = JSONWriter()
        w.beginObject()
        w.key("channels")
        w.beginArray()
        for channel in page.channels { w.raw(bytes: encode(channel, for: user)) }
        w.endArray()
        w.key("next"); w.string(next)
        w.endObject()
        return w.bytes
    }

    static func userPage(_ users: [WireEncoding.UserView], next: String?) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("users")
        w.beginArray()
        for view in users { WireEncoding.write(view, to: &w) }
        w.endArray()
        w.key("next"); w.string(next)
        w.endObject()
        return w.bytes
    }
}
