import ChatCore
import Storage

extension ChatService {
    func userView(_ user: User, for viewer: UserID) -> WireEncoding.UserView {
        engine.userView(user, for: viewer)
    }

    func me(id: JSONValue, session: SessionRecord) throws(ChatError) {
        let user = try directory.user(session.userID)
        let view = userView(user, for: user.id)
        let blocked = directory.blocks.blocked(by: user.id).sorted()
        reply(session, id: id) { w in
            w.beginObject()
            w.key("user"); WireEncoding.write(view, to: &w)
            w.key("blockedUserIds")
            w.beginArray()
            for other in blocked { w.string(other) }
            w.endArray()
            w.endObject()
        }
    }

    func userGet(id: JSONValue, session: SessionRecord, target: UserID) throws(ChatError) {
        let view = userView(try directory.user(target), for: session.userID)
        reply(session, id: id) { WireEncoding.write(view, to: &$0) }
    }

    func userList(id: JSONValue, session: SessionRecord, ids: [UserID]?, key: String?, values: [String]?,
                  limit: Int, cursor: String?) throws(ChatError) {
        let after = try cursor.map { (text) throws(ChatError) in try cursors.open(text, fieldCount: 2) }
        if let after, after[0] != "users" { throw ChatError(.invalidCursor, "cursor is for another list") }
        let page = directory.listUsers(ids: ids, metadataKey: key, metadataValues: values, limit: limit, afterID: after?[1])
        let views = page.users.map { userView($0, for: session.userID) }
        let next = page.next.map { cursors.seal(["users", $0]) }
        reply(session, id: id) { w in Self.writeUserPage(views, next: next, to: &w) }
    }

    func userUpdate(id: JSONValue, session: SessionRecord, name: String?, image: String?, metadata: [String: String]?) {
        run(engine.changeUser(session.userID, .profile(name: name, image: image, metadata: metadata),
                              for: .session(session.id, requestID: id), now: clock.now()))
    }

    /// The same from the admin API (`POST /v1/admin/users`, deactivation).
    func changeUser(_ user: UserID, _ change: UserChange, respond: @escaping @Sendable (EngineReply) -> Void) {
        lastAdminCall += 1
        adminReplies[lastAdminCall] = respond
        run(engine.changeUser(user, change, for: .admin(lastAdminCall), now: clock.now()))
    }
}
