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
