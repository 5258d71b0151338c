import Foundation

extension ChatClient {
    /// Every message of a channel this user can see, exactly once and in `seq` order, from
    /// `afterSeq` on (nil: from the newest message now), across reconnects; own messages
    /// included once their send is answered. The client follows the channel from this call on.
    public func messages(in channelID: String, afterSeq: Int64? = nil) async throws -> AsyncStream<Message> {
        if feeds[channelID] == nil {
            let start: Int64
            if let afterSeq {
                start = afterSeq
            } else {
                start = try await channel(channelID).lastMessage?.seq ?? 0
            }
            if feeds[channelID] == nil {
                feeds[channelID] = ChannelFeed(afterSeq: start)
                if afterSeq != nil { catchUp(channelID) }
            }
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Message.self)
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

    /// A message that arrived live or answered a send.
    func feed(_ message: Message) {
        guard var feed = feeds[message.channelId] else { return }
        var deliver: [Message] = []
        let action = feed.received(message, deliver: &deliver)
        feeds[message.channelId] = feed
        hand(deliver, in: message.channelId)
        if let action { run(action, in: message.channelId) }
    }

    /// Reads what the channel got after the last message handed to the app.
    func catchUp(_ channelID: String) {
        guard var feed = feeds[channelID], let action = feed.catchUp() else { return }
        feeds[channelID] = feed
        run(action, in: channelID)
    }

    private func run(_ action: ChannelFeed.Action, in channelID: String) {
        switch action {
        case .readHistory(let afterSeq):
            Task { await readHistory(channelID, afterSeq: afterSeq) }
        }
    }

    private func readHistory(_ channelID: String, afterSeq: Int64) async {
        let page: Page<Message>
        do {
            page = try await history(channelID, afterSeq: afterSeq, limit: options.historyPageSize)
        } catch {
            // The connection went (its reconnect catches up again) or the channel is gone.
            feeds[channelID]?.historyFailed()
            return
        }
        guard var feed = feeds[channelID] else { return }
        var deliver: [Message] = []
        let action = feed.historyRead(page.items, more: page.next != nil, deliver: &deliver)
        feeds[channelID] = feed
        hand(deliver, in: channelID)
        if let action { run(action, in: channelID) }
    }

    private func hand(_ messages: [Message], in channelID: String) {
        guard !messages.isEmpty, let subscribers = feedSubscribers[channelID] else { return }
        for message in messages {
            for continuation in subscribers.values { continuation.yield(message) }
        }
    }

    /// `message.send`: stored once however often the connection drops before the answer (the
    /// same `clientMessageId` goes again), answered with the stored message.
    public func send(_ text: String, to channelID: String, data: ChatData? = nil,
                     clientMessageID: String = UUID().uuidString) async throws -> Message {
        var params: [String: any Sendable] = ["channelId": channelID, "text": text, "clientMessageId": clientMessageID]
        if let data { params["data"] = Unchecked(data.foundationValue) }
        while true {
            do {
                let stored = try decode(Message.self, try await request("message.send", params))
                feed(stored)
                return stored
            } catch let error as ChatClientError where error.code == .rateLimited && options.retryRateLimited {
                try await Task.sleep(for: .milliseconds(max(error.retryAfterMs ?? 200, 1)))
            }
        }
    }

    /// `message.history`: the newest `limit` messages before `beforeSeq` (or the newest), or
    /// the first `limit` after `afterSeq`, ascending.
    public func history(_ channelID: String, beforeSeq: Int64? = nil, afterSeq: Int64? = nil,
                        limit: Int = 50) async throws -> Page<Message> {
        var params: [String: any Sendable] = ["channelId": channelID, "limit": limit]
        if let beforeSeq { params["beforeSeq"] = beforeSeq }
        if let afterSeq { params["afterSeq"] = afterSeq }
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
