import ChatCore
import Storage

extension ChatService {
    func messageSend(id: JSONValue, session: SessionRecord, channelID: ChannelID, text: String, dataJSON: String?,
                     clientMessageID: String?) {
        run(engine.sendMessage(channelID, text: text, dataJSON: dataJSON, clientMessageID: clientMessageID,
                               from: session.userID, device: session.device, for: .session(session.id, requestID: id),
                               now: clock.now(), monotonicNow: clock.monotonicNow()))
    }

    func relation(sender: UserID, recipient: UserID) -> DeliveryPolicy.Relation {
        engine.relation(sender: sender, recipient: recipient)
    }

    func messageHistory(id: JSONValue, session: SessionRecord, channelID: ChannelID, before: Int64?, after: Int64?,
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
        let page = HistoryPage(channel: channel, viewer: session.userID, hideBlocked: session.hideBlocked,
                               forward: after != nil, limit: limit)
        fetch(page, from: after ?? before) { [self] result in
            switch result {
            case .success(let page):
                let next = page.next.map { cursors.seal(["history", channelID, page.forward ? "after" : "before", String($0)]) }
                reply(session, id: id) { w in
                    w.beginObject()
                    w.key("messages")
                    w.beginArray()
                    for message in page.messages { WireEncoding.write(message, to: &w) }
                    w.endArray()
                    w.key("next"); w.string(next)
                    w.endObject()
                }
            case .failure:
                reply(session, id: id, error: ChatError(.internalError, "storage failed; retry"))
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
