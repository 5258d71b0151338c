/// A page of messages read for one viewer, waiting for the reactions and replies its
/// counts depend on (`Store.attributions`), and how its reply ends.
struct AttributedPage: Sendable {
    enum Ending: Sendable {
        /// `message.history`: `{"messages","next"}` with a sealed cursor.
        case history(next: String?)
        /// `message.changes`: `{"messages","version","next"}`.
        case changes(version: Int64, next: Int64?)
    }

    var requester: Requester
    var viewer: MessageViewer
    var messages: [Message]
    var ending: Ending
}

/// A `message.changes` request being read (§15).
struct ChangesRead: Sendable {
    static let maxScannedRows = 1000

    var requester: Requester
    var viewer: MessageViewer
    var channelID: ChannelID
    var limit: Int
    /// The channel's version when the request arrived: every change up to it is in the store.
    var versionAtRequest: Int64
    var messages: [Message] = []
    var scanned = 0
    var lastScannedVersion: Int64
}

extension ChatEngine {
    /// `message.changes` (PROTOCOL.md §15): the messages created or changed after
    /// `afterVersion`, each once in its latest state as the viewer sees it, ascending
    /// `version`. A page ends at `limit` messages or after `ChangesRead.maxScannedRows`
    /// stored ones; `next` says where the following page starts, nil when the reply covers
    /// everything up to `version`.
    public mutating func readChanges(_ channelID: ChannelID, afterVersion: Int64, limit: Int, by user: UserID,
                                     hideBlocked: Bool, for requester: Requester) -> [EngineEffect] {
        do throws(ChatError) {
            let channel = try directory.memberChannel(channelID, of: user)
            let read = ChangesRead(requester: requester, viewer: viewer(user, hideBlocked: hideBlocked, in: channel),
                                   channelID: channelID, limit: limit, versionAtRequest: directory.version(of: channelID),
                                   lastScannedVersion: afterVersion)
            return readChanges(read)
        } catch {
            return [.reply(requester, .failure(error))]
        }
    }

    private mutating func readChanges(_ read: ChangesRead) -> [EngineEffect] {
        let id = nextWriteID()
        changeReads[id] = read
        // One more than the page holds: the row after a full page says whether the page
        // would end inside a version a reply shares with its parent.
        return [.readChanges(id, channel: read.channelID, viewer: read.viewer.user, afterVersion: read.lastScannedVersion,
                             limit: read.limit + 1)]
    }

    /// A batch the store read for `readChanges`, ascending (version, seq) (nil: the read failed).
    ///
    /// A reply and its parent share one version; `next` is a version to read after, so a
    /// page never ends between the two: a full page whose next row shares the last row's
    /// version gives that version back to the next page (or, when that would leave the page
    /// empty, takes the row in).
    public mutating func changesRead(_ id: WriteID, _ batch: [Message]?) -> [EngineEffect] {
        guard var read = changeReads.removeValue(forKey: id) else { return [] }
        guard let batch else { return [.reply(read.requester, .failure(ChatError(.internalError, "storage failed; retry")))] }
        var next: Int64?
        var ended = false
        for message in batch {
            if read.messages.count == read.limit {
                ended = true
                guard let last = read.messages.last, last.version == message.version else {
                    next = read.lastScannedVersion
                    break
                }
                let kept = read.messages.filter { $0.version != last.version }
                if kept.isEmpty {
                    if read.viewer.sees(message) { read.messages.append(message) }
                    next = message.version
                } else {
                    read.messages = kept
                    next = last.version - 1
                }
                break
            }
            read.scanned += 1
            read.lastScannedVersion = message.version
            if read.viewer.sees(message) { read.messages.append(message) }
        }
        if !ended && batch.count == read.limit + 1 {
            // The store may hold more after this batch.
            if read.scanned < ChangesRead.maxScannedRows { return readChanges(read) }
            // Scanned enough for one request: the last version read may be shared, so the
            // next page starts at it again.
            next = read.lastScannedVersion - 1
        }
        let version = max(read.versionAtRequest, read.lastScannedVersion)
        return attribute(AttributedPage(requester: read.requester, viewer: read.viewer, messages: read.messages,
                                        ending: .changes(version: version, next: next)))
    }

    /// Reads what the page's counts depend on for its viewer, then answers.
    mutating func attribute(_ page: AttributedPage) -> [EngineEffect] {
        guard let first = page.messages.first else { return [.reply(page.requester, .result(Self.encode(page, [:])))] }
        var low = first.seq
        var high = first.seq
        for message in page.messages {
            low = min(low, message.seq)
            high = max(high, message.seq)
        }
        let id = nextWriteID()
        attributionReads[id] = page
        var users = page.viewer.cutUsers
        users.insert(page.viewer.user)
        return [.readAttributions(id, channel: first.channelID, seqs: low...high, users: users, viewer: page.viewer.user)]
    }

    /// The store's answer to `readAttributions` (nil: it failed).
    public mutating func attributionsRead(_ id: WriteID, _ attributions: MessageAttributions?) -> [EngineEffect] {
        guard let page = attributionReads.removeValue(forKey: id) else { return [] }
        guard let attributions else {
            return [.reply(page.requester, .failure(ChatError(.internalError, "storage failed; retry")))]
        }
        var views: [Int64: MessageView] = [:]
        let reactions = Dictionary(grouping: attributions.reactions, by: \.seq)
        let replies = Dictionary(grouping: attributions.replies, by: \.parentSeq)
        for message in page.messages {
            views[message.seq] = page.viewer.view(message, reactions: reactions[message.seq] ?? [],
                                                  replies: (replies[message.seq] ?? []).map(\.tally))
        }
        return [.reply(page.requester, .result(Self.encode(page, views)))]
    }

    private static func encode(_ page: AttributedPage, _ views: [Int64: MessageView]) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("messages")
        w.beginArray()
        for message in page.messages {
            let view = views[message.seq] ?? MessageView(message: message)
            WireEncoding.write(view.message, ownReactions: view.ownReactions, to: &w)
        }
        w.endArray()
        switch page.ending {
        case .history(let next):
            w.key("next"); w.string(next)
        case .changes(let version, let next):
            w.key("version"); w.int(version)
            w.key("next"); if let next { w.int(next) } else { w.null() }
        }
        w.endObject()
        return w.bytes
    }
}
