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
        let call = adminCall { reply in
            if case .blockResults(let results) = reply { respond(results) } else { respond(nil) }
        }
        run(engine.setBlocks(targets, blocked: isBlocked, by: blocker, for: call, now: clock.now()))
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
