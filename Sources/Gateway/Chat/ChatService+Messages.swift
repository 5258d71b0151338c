import ChatCore
import Storage

extension ChatService {
    func messageSend(id: JSONValue, session: ChatSession, channelID: ChannelID, text: String, dataJSON: String?,
                     clientMessageID: String?) throws(ChatError) {
        let sender = session.userID
        metrics.messagesReceived.increment()
        let channel = try directory.memberChannel(channelID, of: sender)
        if text.count > settings.maxTextLength {
            throw ChatError(.messageTooLong, "text is longer than \(settings.maxTextLength) characters")
        }
        let box = UncheckedBox(session)
        guard let clientMessageID else {
            try takeSendToken(session)
            commit(draft(channel: channel, sender: sender, text: text, dataJSON: dataJSON, clientMessageID: nil),
                  session: box, id: id, key: nil)
            return
        }
        let key = ClientMessageKey(sender: sender, clientMessageID: clientMessageID)
        if var pending = clientMessages[key] {
            pending.waiting.append((box, id))
            clientMessages[key] = pending
        } else {
            clientMessages[key] = PendingClientMessage()
            store.message(sender: sender, clientMessageID: clientMessageID) { [self] result in
                inbox.async { [self] in
                    switch result {
                    case .success(let stored?):
                        reply(box.value, id: id) { WireEncoding.write(stored, to: &$0) }
                        settle(key, with: .success(stored))
                    case .success(nil):
                        do throws(ChatError) {
                            try takeSendToken(box.value)
                        } catch {
                            reply(box.value, id: id, error: error)
                            settle(key, with: .failure(error))
                            return
                        }
                        commit(draft(channel: channel, sender: sender, text: text, dataJSON: dataJSON,
                                    clientMessageID: clientMessageID), session: box, id: id, key: key)
                    case .failure:
                        let error = ChatError(.internalError, "storage failed; retry")
                        reply(box.value, id: id, error: error)
                        settle(key, with: .failure(error))
                    }
                }
            }
        }
    }

    /// Spends one of the sender's tokens (§6), or throws ERR_RATE_LIMITED with when to retry.
    /// Only a message about to be stored spends one: invalid sends and retries of a stored message do not.
    private func takeSendToken(_ session: ChatSession) throws(ChatError) {
        guard case .limited(let retryAfterMs)? = userMessageRates?.take(session.userNumber, now: clock.monotonicNow()) else {
            limitedUsers.remove(session.userNumber)
            return
        }
        metrics.messagesRateLimited.increment()
        // One line when a user starts hitting the limit, not one per rejected send.
        if limitedUsers.insert(session.userNumber).inserted {
            logger.notice("message.rate_limited", metadata: [
                "user": "\(session.userID)", "device": "\(session.device ?? "")", "retryAfterMs": "\(retryAfterMs)",
            ])
        }
        throw ChatError(.rateLimited, "over \(settings.userMessagesPerSecond) messages per second; retry in \(retryAfterMs) ms",
                        retryAfterMs: retryAfterMs)
    }

    /// A new message; in a 1-to-1 channel it is stored hidden from a recipient who blocked the sender.
    private func draft(channel: Channel, sender: UserID, text: String, dataJSON: String?, clientMessageID: String?) -> Message {
        let now = clock.now()
        var hiddenFrom: UserID?
        if channel.kind == .oneToOne, let other = channel.members.first(where: { $0 != sender }),
           DeliveryPolicy.hiddenForever(kind: .oneToOne, mode: settings.blockingMode, relation: relation(sender: sender, recipient: other)) {
            hiddenFrom = other
        }
        return Message(id: ids.make(prefix: "m_", at: now), channelID: channel.id, senderID: sender, text: text,
                       dataJSON: dataJSON, clientMessageID: clientMessageID, createdAt: now, hiddenFrom: hiddenFrom)
    }

    func relation(sender: UserID, recipient: UserID) -> DeliveryPolicy.Relation {
        DeliveryPolicy.Relation(recipientBlockedSender: directory.blocks.hasBlocked(recipient, sender),
                                senderBlockedRecipient: directory.blocks.hasBlocked(sender, recipient))
    }

    /// The sender's block relations inside `channel`, from the cache.
    private func senderRelations(_ sender: UserID, in channel: Channel) -> SenderRelations {
        relationsCache.relations(sender: sender, channel: channel.id, directory: directory) {
            var related: Set<UserNumber> = []
            var listUnmoved: Set<UserID> = []
            // Walk the sender's block relations (usually few), not the channel's members.
            for user in directory.blocks.blockers(of: sender).union(directory.blocks.blocked(by: sender))
            where directory.channelIDs(of: user).contains(channel.id) {
                related.insert(number(for: user))
                if !DeliveryPolicy.movesChannelList(kind: channel.kind, mode: settings.blockingMode,
                                                    relation: relation(sender: sender, recipient: user)) {
                    listUnmoved.insert(user)
                }
            }
            return SenderRelations(related: related.isEmpty ? nil : related, listUnmoved: listUnmoved)
        }
    }

    /// Push events for members with no live connection, filtered by §5.
    private func pushEvents(for message: Message, in channel: Channel) -> [PushEvent] {
        guard channel.kind != .open else { return [] }
        var events: [PushEvent] = []
        for member in directory.offlineMembers(of: channel.id) where member != message.senderID && member != message.hiddenFrom {
            let relation = relation(sender: message.senderID, recipient: member)
            if DeliveryPolicy.pushes(kind: channel.kind, mode: settings.blockingMode, relation: relation,
                                     pushFromBlockedUsers: channel.pushFromBlockedUsers) {
                events.append(PushEvent(userID: member, message: message))
            }
        }
        return events
    }

    /// Stores the message; on commit: reply `ok`, then fan `message.new` out once.
    private func commit(_ message: Message, session: UncheckedBox<ChatSession>, id: JSONValue, key: ClientMessageKey?) {
        persist(.insertMessage(message)) { [self] outcome in
            switch outcome {
            case .success(.message(let stored)):
                // Retries that waited are answered after the original send's reply.
                defer { if let key { settle(key, with: .success(stored)) } }
                metrics.messagesStored.increment()
                guard let channel = directory.channels[stored.channelID] else { return }
                let relations = senderRelations(stored.senderID, in: channel)
                directory.record(stored, hiddenFor: relations.listUnmoved)
                reply(session.value, id: id) { WireEncoding.write(stored, to: &$0) }
                // Open channels deliver at most N a second live; the rest is in history only (§6).
                if channel.kind != .open || openChannelRates?.admit(channel.id, now: clock.monotonicNow()) ?? true {
                    let origin = SharedEvent.Origin(sender: number(for: stored.senderID), hiddenFrom: stored.hiddenFrom.map(number(for:)),
                                                    related: relations.related, kind: channel.kind, mode: settings.blockingMode)
                    let event = SharedEvent(payload: WireEncoding.event("message.new") { WireEncoding.write(stored, to: &$0) },
                                            origin: origin)
                    publish(event, to: stored.channelID, excluding: session.value)
                } else {
                    metrics.messagesOpenChannelThrottled.increment()
                }
                push.emit(pushEvents(for: stored, in: channel))
            case .success(.done), .failure:
                let error = ChatError(.internalError, "storage failed; retry")
                reply(session.value, id: id, error: error)
                if let key { settle(key, with: .failure(error)) }
            }
        }
    }

    /// Answers every retry that waited for the first send of the same clientMessageId.
    private func settle(_ key: ClientMessageKey, with result: Result<Message, ChatError>) {
        guard let waiting = clientMessages.removeValue(forKey: key)?.waiting else { return }
        switch result {
        case .success(let message):
            for (session, id) in waiting { reply(session.value, id: id) { WireEncoding.write(message, to: &$0) } }
        case .failure(let error):
            for (session, id) in waiting { reply(session.value, id: id, error: error) }
        }
    }

    func messageHistory(id: JSONValue, session: ChatSession, channelID: ChannelID, before: Int64?, after: Int64?,
                        limit: Int, cursor: String?) throws(ChatError) {
        let channel = try directory.memberChannel(channelID, of: session.userID)
        var (before, after) = (before, after)
        if let cursor {
            let fields = try cursors.open(cursor, fieldCount: 4)
            guard fields[0] == "history", fields[1] == channelID, let seq = Int64(fields[3]), ["after", "before"].contains(fields[2]) else {
                throw ChatError(.invalidCursor, "cursor is for another list")
            }
            if fields[2] == "after" { after = seq } else { before = seq }
        }
        let box = UncheckedBox(session)
        let page = HistoryPage(channel: channel, viewer: session.userID, hideBlocked: session.hideBlocked,
                               forward: after != nil, limit: limit)
        fetch(page, from: after ?? before) { [self] result in
            switch result {
            case .success(let page):
                let next = page.next.map { cursors.seal(["history", channelID, page.forward ? "after" : "before", String($0)]) }
                reply(box.value, id: id) { w in
                    w.beginObject()
                    w.key("messages")
                    w.beginArray()
                    for message in page.messages { WireEncoding.write(message, to: &w) }
                    w.endArray()
                    w.key("next"); w.string(next)
                    w.endObject()
                }
            case .failure:
                reply(box.value, id: id, error: ChatError(.internalError, "storage failed; retry"))
            }
        }
    }

    /// One `message.history` read: which way it pages, what the viewer may see, and what
    /// it collected so far.
    ///
    /// A page ends at `limit` messages, at `maxPageBytes` of message text and data (one
    /// message at least), or after `maxScannedRows` stored messages were read (a reader
    /// who blocked a prolific sender must not make one request scan the whole channel);
    /// `next` then says where the following page starts. It is nil only when the channel
    /// holds nothing more in that direction.
    struct HistoryPage: Sendable {
        static let maxPageBytes = 512 * 1024
        static let maxScannedRows = 1000

        var channel: Channel
        var viewer: UserID
        var hideBlocked: Bool
        /// `afterSeq` pages forward (oldest first); `beforeSeq` or neither pages back.
        var forward: Bool
        var limit: Int
        var messages: [Message] = []
        var bytes = 0
        var scanned = 0
        /// The seq to continue from (`afterSeq` forward, `beforeSeq` back), when more may follow.
        var next: Int64?

        /// Rough wire size of a message: its text and data, and the fields around them.
        static func wireSize(_ message: Message) -> Int {
            message.text.utf8.count + (message.dataJSON?.utf8.count ?? 0) + 256
        }

        /// Takes a batch read from the store (in seq order); true when the page is complete.
        mutating func take(_ batch: [Message], visible: (Message) -> Bool) -> Bool {
            scanned += batch.count
            let ordered = forward ? batch : batch.reversed()
            for message in ordered {
                guard visible(message) else { continue }
                let size = Self.wireSize(message)
                if messages.count == limit || (!messages.isEmpty && bytes + size > Self.maxPageBytes) {
                    // Full: the next page starts at the last message kept.
                    next = forward ? messages.last?.seq : messages.first?.seq
                    return true
                }
                if forward { messages.append(message) } else { messages.insert(message, at: 0) }
                bytes += size
            }
            let exhausted = batch.count < limit
            if exhausted {
                next = nil
                return true
            }
            if messages.count == limit || scanned >= Self.maxScannedRows {
                // More may follow beyond what was read.
                next = forward ? batch.last?.seq : batch.first?.seq
                return true
            }
            return false
        }
    }

    /// Reads batches from the store until the page is complete (a block can filter a
    /// batch short).
    private func fetch(_ page: HistoryPage, from seq: Int64?,
                       completion: @escaping @Sendable (Result<HistoryPage, StoreError>) -> Void) {
        store.history(channelID: page.channel.id, viewer: page.viewer, beforeSeq: page.forward ? nil : seq,
                      afterSeq: page.forward ? seq : nil, limit: page.limit) { [self] result in
            inbox.async { [self] in
                let batch: [Message]
                switch result {
                case .success(let read): batch = read
                case .failure(let error):
                    completion(.failure(error))
                    return
                }
                let viewing = page
                var page = page
                if page.take(batch, visible: { shows($0, to: viewing) }) {
                    completion(.success(page))
                } else {
                    fetch(page, from: page.forward ? batch.last?.seq : batch.first?.seq, completion: completion)
                }
            }
        }
    }

    private func shows(_ message: Message, to page: HistoryPage) -> Bool {
        let relation = relation(sender: message.senderID, recipient: page.viewer)
        guard relation != .none else { return true }
        return DeliveryPolicy.showsInHistory(kind: page.channel.kind, mode: settings.blockingMode,
                                             relation: relation, hideBlocked: page.hideBlocked)
    }
}
