import ChatCore
import Storage

extension ChatService {
    /// `user.block` / `user.unblock` from a client, decided by the engine.
    func setBlocks(id: JSONValue, session: SessionRecord, targets: [UserID], isBlocked: Bool) {
        run(engine.setBlocks(targets, blocked: isBlocked, by: session.userID,
                             for: .session(session.id, requestID: id), now: clock.now()))
    }

    /// The same from the admin API.
    func setBlocks(blocker: UserID, targets: [UserID], isBlocked: Bool, respond: @escaping @Sendable (EngineReply) -> Void) {
        run(engine.setBlocks(targets, blocked: isBlocked, by: blocker, for: adminCall(respond), now: clock.now()))
    }

    /// A page of a user's block list for the admin API (every direction is open to it).
    func blockedUsers(of user: UserID, direction: BlockDirection, limit: Int, search: String?, userIDs: [UserID]?,
                      cursor: String?, revealed: Bool) throws(ChatError) -> [UInt8] {
        try engine.blockedUsers(of: user, direction: direction, limit: limit, search: search, userIDs: userIDs, cursor: cursor,
                                revealed: revealed)
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
}
