import ChatCore
import Storage

extension ChatService {
    func userView(_ user: User, for viewer: UserID) -> WireEncoding.UserView {
        WireEncoding.UserView(
            user: user, online: !(sessions[user.id]?.isEmpty ?? true),
            blockedByMe: directory.blocks.hasBlocked(viewer, user.id),
            hasBlockedMe: settings.revealBlockedBy ? directory.blocks.hasBlocked(user.id, viewer) : nil)
    }

    func me(id: JSONValue, session: ChatSession) throws(ChatError) {
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

    func userGet(id: JSONValue, session: ChatSession, target: UserID) throws(ChatError) {
        let view = userView(try directory.user(target), for: session.userID)
        reply(session, id: id) { WireEncoding.write(view, to: &$0) }
    }

    func userList(id: JSONValue, session: ChatSession, ids: [UserID]?, key: String?, values: [String]?,
                  limit: Int, cursor: String?) throws(ChatError) {
        let after = try cursor.map { (text) throws(ChatError) in try cursors.open(text, fieldCount: 2) }
        if let after, after[0] != "users" { throw ChatError(.invalidCursor, "cursor is for another list") }
        let page = directory.listUsers(ids: ids, metadataKey: key, metadataValues: values, limit: limit, afterID: after?[1])
        let views = page.users.map { userView($0, for: session.userID) }
        let next = page.next.map { cursors.seal(["users", $0]) }
        reply(session, id: id) { w in Self.writeUserPage(views, next: next, to: &w) }
    }

    func userUpdate(id: JSONValue, session: ChatSession, name: String?, image: String?, metadata: [String: String]?) {
        guard var user = directory.users[session.userID] else { return }
        if let name { user.name = name }
        if let image { user.image = image }
        if let metadata { user.metadata = metadata }
        directory.upsert(user)
        let view = userView(user, for: user.id)
        persist(.upsertUser(user), reply: session, id: id) { WireEncoding.write(view, to: &$0) }
    }

    /// Creates or updates a user (admin API, token profile on connect).
    func upsertUser(id userID: UserID, name: String?, image: String?, metadata: [String: String]?) -> User {
        var user = directory.users[userID] ?? User(id: userID, createdAt: clock.now())
        if let name { user.name = name }
        if let image { user.image = image }
        if let metadata { user.metadata = metadata }
        directory.upsert(user)
        return user
    }
}
