import ChatCore
import Storage

extension ChatService {
    /// `user.block` / `user.unblock` from a client, decided by the engine.
    func setBlocks(id: JSONValue, session: SessionRecord, targets: [UserID], isBlocked: Bool) {
        run(engine.setBlocks(targets, blocked: isBlocked, by: session.userID,
                             for: .session(session.id, requestID: id), now: clock.now()))
    }

    /// The same from the admin API: `respond` gets each target's result, or nil when no
    /// write committed.
    func setBlocks(blocker: UserID, targets: [UserID], isBlocked: Bool,
                   respond: @escaping @Sendable ([UserID: String]?) -> Void) {
        lastAdminCall += 1
        adminReplies[lastAdminCall] = { reply in
            if case .blockResults(let results) = reply { respond(results) } else { respond(nil) }
        }
        run(engine.setBlocks(targets, blocked: isBlocked, by: blocker, for: .admin(lastAdminCall), now: clock.now()))
    }

    static func writeResults(_ results: [UserID: String], to w: inout JSONWriter) {
        w.beginObject()
        w.key("results")
        w.beginObject()
        for key in results.keys.sorted() {
            w.key(key)
            w.string(results[key] ?? "")
        }
        w.endObject()
        w.endObject()
    }

    /// `user.blocked.list`: users sorted by id, filtered, paged with a sealed cursor.
    func blockedUsers(of user: UserID, direction: BlockDirection, limit: Int, search: String?, userIDs: [UserID]?,
                      cursor: String?, revealed: Bool = false) throws(ChatError) -> (users: [WireEncoding.UserView], next: String?) {
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
        return (page.map { userView($0, for: user) }, next)
    }

    func blockedList(id: JSONValue, session: SessionRecord, direction: BlockDirection, limit: Int, search: String?,
                     userIDs: [UserID]?, cursor: String?) throws(ChatError) {
        let page = try blockedUsers(of: session.userID, direction: direction, limit: limit, search: search,
                                    userIDs: userIDs, cursor: cursor)
        reply(session, id: id) { w in Self.writeUserPage(page.users, next: page.next, to: &w) }
    }

    static func writeUserPage(_ users: [WireEncoding.UserView], next: String?, to w: inout JSONWriter) {
        w.beginObject()
        w.key("users")
        w.beginArray()
        for view in users { WireEncoding.write(view, to: &w) }
        w.endArray()
        w.key("next"); w.string(next)
        w.endObject()
    }
}
