import ChatCore
import Storage

extension ChatService {
    func messageSend(id: JSONValue, session: SessionRecord, channelID: ChannelID, text: String, dataJSON: String?,
                     clientMessageID: String?) {
        run(engine.sendMessage(channelID, text: text, dataJSON: dataJSON, clientMessageID: clientMessageID,
                               from: session.userID, device: session.device, for: .session(session.id, requestID: id),
                               now: clock.now(), monotonicNow: clock.monotonicNow()))
    }

    func messageHistory(id: JSONValue, session: SessionRecord, channelID: ChannelID, before: Int64?, after: Int64?,
                        limit: Int, cursor: String?) {
        run(engine.readHistory(channelID, beforeSeq: before, afterSeq: after, limit: limit, cursor: cursor,
                               by: session.userID, hideBlocked: session.hideBlocked, for: .session(session.id, requestID: id)))
    }
}
