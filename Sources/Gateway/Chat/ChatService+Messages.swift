import ChatCore
import Storage

extension ChatService {
    func messageSend(id: JSONValue, session: ChatSession, channelID: ChannelID, text: String, dataJSON: String?,
                     clientMessageID: String?) throws(ChatError) {
        let sender = session.userID
        _ = try directory.memberChannel(channelID, of: sender)
        if text.count > settings.maxTextLength {
            throw ChatError(.messageTooLong, "text is longer than \(settings.maxTextLength) characters")
        }
        let box = UncheckedBox(session)
        guard let clientMessageID else {
            commit(draft(channelID: channelID, sender: sender, text: text, dataJSON: dataJSON, clientMessageID: nil),
                  session: box, id: id, key: nil)
            return
        }
        let key = ClientMessageKey(sender: sender, clientMessageID: clientMessageID)
        switch clientMessages[key] {
        case .stored(let message)?:
            reply(session, id: id) { WireEncoding.write(message, to: &$0) }
        case .pending(var waiting)?:
            waiting.append((box, id))
            clientMessages[key] = .pending(waiting)
        case nil:
            clientMessages[key] = .pending([])
            store.message(sender: sender, clientMessageID: clientMessageID) { [self] result in
                queue.async { [self] in
                    switch result {
                    case .success(let stored?):
                        settle(key, with: .success(stored))
                        reply(box.value, id: id) { WireEncoding.write(stored, to: &$0) }
                    case .success(nil):
                        commit(draft(channelID: channelID, sender: sender, text: text, dataJSON: dataJSON,
                                    clientMessageID: clientMessageID), session: box, id: id, key: key)
                    case .failure:
                        settle(key, with: .failure(ChatError(.internalError, "storage failed; retry")))
                        reply(box.value, id: id, error: ChatError(.internalError, "storage failed; retry"))
                    }
                }
            }
        }
    }

    private func draft(channelID: ChannelID, sender: UserID, text: String, dataJSON: String?, clientMessageID: String?) -> Message {
        let now = clock.now()
        return Message(id: ids.make(prefix: "m_", at: now), channelID: channelID, senderID: sender, text: text,
                       dataJSON: dataJSON, clientMessageID: clientMessageID, createdAt: now)
    }

    /// Stores the message; on commit: reply `ok`, then fan `message.new` out once.
    private func commit(_ message: Message, session: UncheckedBox<ChatSession>, id: JSONValue, key: ClientMessageKey?) {
        persist(.insertMessage(message)) { [self] outcome in
            switch outcome {
            case .success(.message(let stored)):
                if let key { settle(key, with: .success(stored)) }
                directory.record(stored)
                reply(session.value, id: id) { WireEncoding.write(stored, to: &$0) }
                let event = SharedEvent(payload: WireEncoding.event("message.new") { WireEncoding.write(stored, to: &$0) })
                publish(event, to: stored.channelID, excluding: session.value)
            case .success(.done), .failure:
                let error = ChatError(.internalError, "storage failed; retry")
                if let key { settle(key, with: .failure(error)) }
                reply(session.value, id: id, error: error)
            }
        }
    }

    /// Answers every retry that waited for the first send of the same clientMessageId.
    private func settle(_ key: ClientMessageKey, with result: Result<Message, ChatError>) {
        guard case .pending(let waiting)? = clientMessages[key] else { return }
        switch result {
        case .success(let message):
            clientMessages[key] = .stored(message)
            for (session, id) in waiting { reply(session.value, id: id) { WireEncoding.write(message, to: &$0) } }
        case .failure(let error):
            clientMessages[key] = nil
            for (session, id) in waiting { reply(session.value, id: id, error: error) }
        }
    }

    func messageHistory(id: JSONValue, session: ChatSession, channelID: ChannelID, before: Int64?, after: Int64?,
                        limit: Int) throws(ChatError) {
        _ = try directory.memberChannel(channelID, of: session.userID)
        let box = UncheckedBox(session)
        store.history(channelID: channelID, viewer: session.userID, beforeSeq: before, afterSeq: after, limit: limit) { [self] result in
            switch result {
            case .success(let messages):
                reply(box.value, id: id) { w in
                    w.beginObject()
                    w.key("messages")
                    w.beginArray()
                    for message in messages { WireEncoding.write(message, to: &w) }
                    w.endArray()
                    w.endObject()
                }
            case .failure:
                reply(box.value, id: id, error: ChatError(.internalError, "storage failed; retry"))
            }
        }
    }
}
