import ChatCore

extension ChatService {
    func userUpdate(id: JSONValue, session: SessionRecord, name: String?, image: String?, metadata: [String: String]?) {
        run(engine.changeUser(session.userID, .profile(name: name, image: image, metadata: metadata),
                              for: .session(session.id, requestID: id), now: clock.now()))
    }

    /// The same from the admin API (`POST /v1/admin/users`, deactivation).
    func changeUser(_ user: UserID, _ change: UserChange, respond: @escaping @Sendable (EngineReply) -> Void) {
        run(engine.changeUser(user, change, for: adminCall(respond), now: clock.now()))
    }

    /// `ERR_UID_NOT_FOUND` unless the user exists (admin API).
    func requireUser(_ id: UserID) throws(ChatError) {
        _ = try engine.directory.user(id)
    }
}
