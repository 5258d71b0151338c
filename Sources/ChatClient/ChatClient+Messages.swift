import Foundation

extension ChatClient {
    /// A channel's messages for the app from `afterSeq` on (nil: from the newest message now),
    /// across reconnects, own messages included once their send is answered: every message this
    /// user can see once as `.new`, in `seq` order, and each later state of a message handed out
    /// as `.updated` (edits, deletes, reply counts; after a reconnect, whatever changed while
    /// the client was away, read with `message.changes`), live reaction counts as `.reactions`.
    /// The client follows the channel from this call on.
    ///
    /// - Parameter afterVersion: the channel version the app's stored messages up to `afterSeq`
    ///   are current to (a `Message.version` or `Channel.version` it kept): changes made since
    ///   to those messages come as `.updated`. Without it, changes from this call on.
    public func messages(in channelID: String, afterSeq: Int64? = nil,
                         afterVersion: Int64? = nil) async throws -> AsyncStream<MessageFeedItem> {
        if feeds[channelID] == nil {
            let feed: ChannelFeed
            if let afterSeq, let afterVersion {
                feed = ChannelFeed(afterSeq: afterSeq, version: afterVersion)
            } else {
                // Where the channel stands now: its version, and its newest message.
                let channel = try await channel(channelID)
                if let afterSeq {
                    feed = ChannelFeed(afterSeq: afterSeq, version: channel.version, backfill: true)
                } else {
                    feed = ChannelFeed(afterSeq: channel.lastMessage?.seq ?? 0, version: channel.version)
                }
            }
            if feeds[channelID] == nil {
                feeds[channelID] = feed
                // What came while the feed was being set up (nothing, usually).
                catchUp(channelID)
            }
        }
        let (stream, continuation) = AsyncStream.makeStream(of: MessageFeedItem.self)
        let key = UUID()
        feedSubscribers[channelID, default: [:]][key] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.stopFeed(channelID, key) } }
        return stream
    }

    private func stopFeed(_ channelID: String, _ key: UUID) {
        feedSubscribers[channelID]?[key] = nil
        if feedSubscribers[channelID]?.isEmpty ?? true {
            feedSubscribers[channelID] = nil
            feeds[channelID] = nil
        }
    }

    /// A new message that arrived live (`message.new`) or answered a send.
    func feed(_ message: Message, live: Bool) {
        step(message.channelId) { feed, deliver in feed.received(message, live: live, deliver: &deliver) }
    }

    /// A newer state of a message: `message.updated`, or the answer to an edit, delete or reaction.
    func feed(updated message: Message, live: Bool) {
        step(message.channelId) { feed, deliver in feed.updated(message, live: live, deliver: &deliver) }
    }

    /// `reaction.added` / `reaction.removed`.
    func feed(_ update: ReactionUpdate) {
        step(update.channelId) { feed, deliver in feed.reacted(update, deliver: &deliver) }
    }

    /// Reads what the channel got after the feed's cursors.
    func catchUp(_ channelID: String) {
        step(channelID) { feed, _ in feed.catchUp() }
    }

    /// Runs one transition of a channel's feed: hands out what it delivers, then starts the read it asks for.
    private func step(_ channelID: String,
                      _ transition: (inout ChannelFeed, inout [MessageFeedItem]) -> ChannelFeed.Action?) {
        guard var feed = feeds[channelID] else { return }
        var deliver: [MessageFeedItem] = []
        let action = transition(&feed, &deliver)
        feeds[channelID] = feed
        hand(deliver, in: channelID)
        if let action { run(action, in: channelID) }
    }

    private func run(_ action: ChannelFeed.Action, in channelID: String) {
        switch action {
        case .readHistory(let afterSeq):
            Task { await readHistory(channelID, afterSeq: afterSeq) }
        case .readChanges(let afterVersion):
            Task { await readChanges(channelID, afterVersion: afterVersion) }
        }
    }

    private func readHistory(_ channelID: String, afterSeq: Int64) async {
        let page: Page<Message>
        do {
            page = try await history(channelID, afterSeq: afterSeq, limit: options.historyPageSize)
        } catch {
            // The connection went (its reconnect catches up again) or the channel is gone.
            feeds[channelID]?.readFailed()
            return
        }
        step(channelID) { feed, deliver in feed.historyRead(page.items, more: page.next != nil, deliver: &deliver) }
    }

    private func readChanges(_ channelID: String, afterVersion: Int64) async {
        let page: ChangesPage
        do {
            page = try await changesPage(in: channelID, afterVersion: afterVersion, limit: options.historyPageSize)
        } catch let error as ChatClientError where error.code == .unknownType {
            // A gateway before v1.2: new messages from history, no changes.
            step(channelID) { feed, _ in feed.changesUnsupported() }
            return
        } catch {
            feeds[channelID]?.readFailed()
            return
        }
        step(channelID) { feed, deliver in feed.changesRead(page, deliver: &deliver) }
    }

    private func hand(_ items: [MessageFeedItem], in channelID: String) {
        guard !items.isEmpty, let subscribers = feedSubscribers[channelID] else { return }
        for item in items {
            for continuation in subscribers.values { continuation.yield(item) }
        }
    }

    /// `message.send`: stored once however often the connection drops before the answer (the
    /// same `clientMessageId` goes again), answered with the stored message.
    /// - Parameters:
    ///   - parentSeq: send it as a reply in the thread of that message (not itself a reply).
    ///   - mentionedUserIDs: members it mentions (at most 25; non-members are dropped).
    public func send(_ text: String, to channelID: String, data: ChatData? = nil, parentSeq: Int64? = nil,
                     mentionedUserIDs: [String]? = nil, clientMessageID: String = UUID().uuidString) async throws -> Message {
        var params: [String: any Sendable] = ["channelId": channelID, "text": text, "clientMessageId": clientMessageID]
        if let data { params["data"] = Unchecked(data.foundationValue) }
        if let parentSeq { params["parentSeq"] = parentSeq }
        if let mentionedUserIDs { params["mentionedUserIds"] = mentionedUserIDs }
        let stored = try decode(Message.self, try await requestWaitingOutRateLimits("message.send", params))
        feed(stored, live: false)
        return stored
    }

    /// A request that, with `Options.retryRateLimited`, waits out `ERR_RATE_LIMITED` and goes again.
    func requestWaitingOutRateLimits(_ type: String, _ params: [String: any Sendable], retriable: Bool = true) async throws -> Data {
        while true {
            do {
                return try await request(type, params, retriable: retriable)
            } catch let error as ChatClientError where error.code == .rateLimited && options.retryRateLimited {
                try await Task.sleep(for: .milliseconds(max(error.retryAfterMs ?? 200, 1)))
            }
        }
    }

    /// `message.history`: the newest `limit` messages before `beforeSeq` (or the newest), or
    /// the first `limit` after `afterSeq`, ascending. Without `parentSeq` every message of the
    /// channel, replies included (each with its `parentSeq`); with it, that thread's replies only.
    public func history(_ channelID: String, beforeSeq: Int64? = nil, afterSeq: Int64? = nil, parentSeq: Int64? = nil,
                        limit: Int = 50) async throws -> Page<Message> {
        var params: [String: any Sendable] = ["channelId": channelID, "limit": limit]
        if let beforeSeq { params["beforeSeq"] = beforeSeq }
        if let afterSeq { params["afterSeq"] = afterSeq }
        if let parentSeq { params["parentSeq"] = parentSeq }
        let page = try decode(MessagesPage.self, try await request("message.history", params))
        return Page(items: page.messages, next: page.next)
    }

    func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw ChatClientError(.other("ERR_DECODE"), "unexpected answer: \(error)")
        }
    }
}

struct MessagesPage: Decodable {
    var messages: [Message]
    var next: String?
}

/// A value `JSONSerialization` takes that the compiler cannot prove `Sendable` (a message's
/// `data`, built from a `Sendable` `ChatData` and never mutated).
struct Unchecked: @unchecked Sendable {
    let value: Any
    init(_ value: Any) { self.value = value }
}
