import ChatCore

extension ChatService {
    /// `channel.create` / `invite` / `join` / `leave` / `update`, decided by the engine.
    func changeChannel(_ command: ChannelCommand, id: JSONValue, session: SessionRecord) {
        run(engine.changeChannel(command, by: session.userID, for: .session(session.id, requestID: id), now: clock.now()))
    }

    /// The same from the admin API.
    func changeChannel(_ command: ChannelCommand, respond: @escaping @Sendable (EngineReply) -> Void) {
        run(engine.changeChannel(command, by: "", for: adminCall(respond), now: clock.now()))
    }
}
