import ChatCore

extension ChatService {
    /// `message.update`, `message.delete`, `reaction.add`, `reaction.remove` (§15).
    /// The same from the admin API: the backend acts as no user, with an owner's powers.
    func requestChange(_ change: RequestedChange, _ channelID: ChannelID, _ seq: Int64,
                       respond: @escaping @Sendable (EngineReply) -> Void) {
        run(engine.requestChange(change, channel: channelID, seq: seq, by: "", hideBlocked: false, for: adminCall(respond),
                                 now: clock.now(), monotonicNow: clock.monotonicNow()))
    }

    func requestChange(_ change: RequestedChange, _ channelID: ChannelID, _ seq: Int64, id: JSONValue, session: SessionRecord) {
        run(engine.requestChange(change, channel: channelID, seq: seq, by: session.userID, hideBlocked: session.hideBlocked,
                                 for: .session(session.id, requestID: id), now: clock.now(), monotonicNow: clock.monotonicNow()))
    }
}
