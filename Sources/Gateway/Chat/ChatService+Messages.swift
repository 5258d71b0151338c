import ChatCore

extension ChatService {
    /// `message.update`, `message.delete`, `reaction.add`, `reaction.remove` (§15).
    func requestChange(_ change: RequestedChange, _ channelID: ChannelID, _ seq: Int64, id: JSONValue, session: SessionRecord) {
        run(engine.requestChange(change, channel: channelID, seq: seq, by: session.userID, hideBlocked: session.hideBlocked,
                                 for: .session(session.id, requestID: id), now: clock.now(), monotonicNow: clock.monotonicNow()))
    }
}
