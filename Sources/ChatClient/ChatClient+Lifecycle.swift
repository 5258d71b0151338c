import Foundation

/// Typed calls for the message lifecycle (PROTOCOL.md §15): edits, deletes, reactions,
/// threads and the change log. Edits, deletes and reactions have their own per-user rate
/// (`ERR_RATE_LIMITED` with `retryAfterMs`; waited out with `Options.retryRateLimited`), and
/// each answer is the message's new state, which a followed channel's feed hands out at once.
extension ChatClient {
    /// `message.update` of an own message: new `text`, `data` and/or mentions (at most 25).
    /// Keeps `seq` and `createdAt`, sets `editedAt`. `.messageDeleted` on a
    /// tombstone, `.forbidden` when the caller is not the author.
    public func updateMessage(_ seq: Int64, in channelID: String, text: String? = nil, data: ChatData? = nil,
                              mentionedUserIDs: [String]? = nil) async throws -> Message {
        var params: [String: any Sendable] = ["channelId": channelID, "seq": seq]
        if let text { params["text"] = text }
        if let data { params["data"] = Unchecked(data.foundationValue) }
        if let mentionedUserIDs { params["mentionedUserIds"] = mentionedUserIDs }
        return try changed(try await requestWaitingOutRateLimits("message.update", params))
    }

    /// `message.delete`: the tombstone (empty text, no data, mentions or reactions, `deletedAt`
    /// set). Deleting it again answers the same tombstone.
    public func deleteMessage(_ seq: Int64, in channelID: String) async throws -> Message {
        try changed(try await requestWaitingOutRateLimits("message.delete", ["channelId": channelID, "seq": seq]))
    }

    /// `reaction.add`: one reaction of `kind` (1–64 bytes, no control characters) by this user;
    /// adding it again is a no-op that answers as usual. `.tooManyReactions`
    /// past 25 kinds on one message.
    public func addReaction(_ kind: String, to seq: Int64, in channelID: String) async throws -> Message {
        try changed(try await requestWaitingOutRateLimits("reaction.add", ["channelId": channelID, "seq": seq, "kind": kind]))
    }

    /// `reaction.remove`: removing an absent reaction is a no-op that answers as usual.
    public func removeReaction(_ kind: String, from seq: Int64, in channelID: String) async throws -> Message {
        try changed(try await requestWaitingOutRateLimits("reaction.remove", ["channelId": channelID, "seq": seq, "kind": kind]))
    }

    /// The replies in the thread of message `parentSeq`, ascending (`message.history` with `parentSeq`).
    public func thread(_ parentSeq: Int64, in channelID: String, beforeSeq: Int64? = nil, afterSeq: Int64? = nil,
                       limit: Int = 50) async throws -> Page<Message> {
        try await history(channelID, beforeSeq: beforeSeq, afterSeq: afterSeq, parentSeq: parentSeq, limit: limit)
    }

    /// One page of `message.changes`: messages created or changed after `afterVersion` (limit 1–100).
    public func changesPage(in channelID: String, afterVersion: Int64, limit: Int = 100) async throws -> ChangesPage {
        let params: [String: any Sendable] = ["channelId": channelID, "afterVersion": afterVersion, "limit": limit]
        return try decode(ChangesPage.self, try await request("message.changes", params))
    }

    /// Everything created or changed in a channel after `afterVersion`, every page read: each
    /// message once in its latest state (a message that changed again between two pages is
    /// kept in its newer state, in that state's place), ascending `version`, and the version
    /// the caller is now caught up to.
    public func changes(in channelID: String, afterVersion: Int64, pageSize: Int = 100) async throws -> ChannelChanges {
        var latest: [Int64: Message] = [:]
        var cursor = afterVersion
        while true {
            let page = try await changesPage(in: channelID, afterVersion: cursor, limit: pageSize)
            for message in page.messages where message.version > (latest[message.seq]?.version ?? -1) {
                latest[message.seq] = message
            }
            // A page can be short, even empty, with more after it; a `next` that does not move
            // on would read the same page forever.
            guard let next = page.next, next > cursor else {
                return ChannelChanges(messages: latest.values.sorted { $0.version < $1.version }, version: page.version)
            }
            cursor = next
        }
    }

    /// An answer that is a message's new state: to the feed of its channel, and to the caller.
    private func changed(_ data: Data) throws -> Message {
        let message = try decode(Message.self, data)
        feed(updated: message, live: false)
        return message
    }
}

struct MessageUpdatedEvent: Decodable {
    var message: Message
    var change: String
}

struct ReactionEventData: Decodable {
    var channelId: String
    var seq: Int64
    var userId: String
    var kind: String
    var reactions: [String: Int64]
}
