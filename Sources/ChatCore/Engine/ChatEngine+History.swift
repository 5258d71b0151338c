/// A `message.history` request being read: the page so far and whom it answers.
struct HistoryRead: Sendable {
    var page: HistoryPage
    var requester: Requester
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
    /// Reads one thread's replies (`parentSeq`).
    var thread: Int64? = nil
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

extension ChatEngine {
    /// `message.history` (PROTOCOL.md §4, §5): the store is read in batches
    /// (`readHistory`; answer with `historyRead`) until the page is complete, leaving out
    /// what §5 hides from the reader; `next` is a sealed cursor.
    public mutating func readHistory(_ channelID: ChannelID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int, cursor: String?,
                                     thread: Int64? = nil, by viewer: UserID, hideBlocked: Bool,
                                     for requester: Requester) -> [EngineEffect] {
        do throws(ChatError) {
            let channel = try directory.memberChannel(channelID, of: viewer)
            var (before, after) = (beforeSeq, afterSeq)
            if let cursor {
                let fields = try cursors.open(cursor, fieldCount: 4)
                let kind = thread.map { "thread.\($0)" } ?? "history"
                guard fields[0] == kind, fields[1] == channelID, let seq = Int64(fields[3]),
                      ["after", "before"].contains(fields[2]) else {
                    throw ChatError(.invalidCursor, "cursor is for another list")
                }
                if fields[2] == "after" { after = seq } else { before = seq }
            }
            let page = HistoryPage(channel: channel, viewer: viewer, hideBlocked: hideBlocked, thread: thread, forward: after != nil,
                                   limit: limit)
            return read(HistoryRead(page: page, requester: requester), from: after ?? before)
        } catch {
            return [.reply(requester, .failure(error))]
        }
    }

    /// A batch the store read for `readHistory`, in seq order (nil: the read failed).
    public mutating func historyRead(_ read: WriteID, _ batch: [Message]?, monotonicNow: Milliseconds = 0) -> [EngineEffect] {
        if let channel = gapReads.removeValue(forKey: read) { return gapRead(channel, batch, monotonicNow: monotonicNow) }
        if let catchUp = catchUpReads.removeValue(forKey: read) { return catchUpRead(catchUp, batch, monotonicNow: monotonicNow) }
        guard var pending = historyReads.removeValue(forKey: read) else { return [] }
        guard let batch else {
            return [.reply(pending.requester, .failure(ChatError(.internalError, "storage failed; retry")))]
        }
        let viewing = pending.page
        guard pending.page.take(batch, visible: { shows($0, to: viewing) }) else {
            // A block can filter a batch short: read on from where it ended.
            return self.read(pending, from: pending.page.forward ? batch.last?.seq : batch.first?.seq)
        }
        let page = pending.page
        let kind = page.thread.map { "thread.\($0)" } ?? "history"
        let next = page.next.map { cursors.seal([kind, page.channel.id, page.forward ? "after" : "before", String($0)]) }
        return attribute(AttributedPage(requester: pending.requester,
                                        viewer: viewer(page.viewer, hideBlocked: page.hideBlocked, in: page.channel),
                                        messages: page.messages, ending: .history(next: next)))
    }

    private mutating func read(_ pending: HistoryRead, from seq: Int64?) -> [EngineEffect] {
        let id = nextWriteID()
        historyReads[id] = pending
        let page = pending.page
        return [.readHistory(id, channel: page.channel.id, viewer: page.viewer, beforeSeq: page.forward ? nil : seq,
                             afterSeq: page.forward ? seq : nil, limit: page.limit, thread: page.thread)]
    }

    private func shows(_ message: Message, to page: HistoryPage) -> Bool {
        let relation = relation(sender: message.senderID, recipient: page.viewer)
        guard relation != .none else { return true }
        return DeliveryPolicy.showsInHistory(kind: page.channel.kind, mode: settings.blockingMode,
                                             relation: relation, hideBlocked: page.hideBlocked)
    }
}
