import Foundation

/// Typed calls for the requests of PROTOCOL.md §4 and §14.
extension ChatClient {
    // MARK: users

    /// `me`: the user and the ids it blocked.
    public func me() async throws -> (user: User, blockedUserIds: [String]) {
        let result = try decode(MeResult.self, try await request("me"))
        return (result.user, result.blockedUserIds)
    }

    public func user(_ userID: String) async throws -> User {
        try decode(User.self, try await request("user.get", ["userId": userID]))
    }

    /// `user.list` by ids (at most 250) or by a metadata value, paged.
    public func users(ids: [String]? = nil, metadataKey: String? = nil, metadataValues: [String]? = nil, limit: Int = 20,
                      cursor: String? = nil) async throws -> Page<User> {
        var params: [String: any Sendable] = ["limit": limit]
        if let ids { params["userIds"] = ids }
        if let metadataKey { params["metadataKey"] = metadataKey }
        if let metadataValues { params["metadataValues"] = metadataValues }
        if let cursor { params["cursor"] = cursor }
        let page = try decode(UsersPage.self, try await request("user.list", params))
        return Page(items: page.users, next: page.next)
    }

    /// `user.update` of the caller's own profile.
    public func updateMe(name: String? = nil, image: String? = nil, metadata: [String: String]? = nil) async throws -> User {
        var params: [String: any Sendable] = [:]
        if let name { params["name"] = name }
        if let image { params["image"] = image }
        if let metadata { params["metadata"] = metadata }
        return try decode(User.self, try await request("user.update", params))
    }

    // MARK: blocking (Sendbird's blockUser / CometChat's blockUsers)

    /// Blocks users (1–100 ids), a result per id: `.success` (also when already blocked) or
    /// the reason (`.uidNotFound`, `.cannotBlockSelf`).
    public func block(_ userIDs: [String]) async throws -> [String: BlockResult] {
        try blockResults(try await request("user.block", ["userIds": userIDs]))
    }

    public func unblock(_ userIDs: [String]) async throws -> [String: BlockResult] {
        try blockResults(try await request("user.unblock", ["userIds": userIDs]))
    }

    /// Pages through blocked users (CometChat's `BlockedUsersRequest`, Sendbird's blocked-user
    /// list query): `next()` until it returns nil.
    public nonisolated func blockedUsersQuery(direction: BlockDirection = .blockedByMe, limit: Int = 20,
                                              search: String? = nil, userIDs: [String]? = nil) -> BlockedUsersQuery {
        BlockedUsersQuery(client: self, direction: direction, limit: limit, search: search, userIDs: userIDs)
    }

    func blockedUsers(direction: BlockDirection, limit: Int, search: String?, userIDs: [String]?,
                      cursor: String?) async throws -> Page<User> {
        var params: [String: any Sendable] = ["direction": direction.rawValue, "limit": limit]
        if let search { params["search"] = search }
        if let userIDs { params["userIds"] = userIDs }
        if let cursor { params["cursor"] = cursor }
        let page = try decode(UsersPage.self, try await request("user.blocked.list", params))
        return Page(items: page.users, next: page.next)
    }

    func blockResults(_ data: Data) throws -> [String: BlockResult] {
        let results = try decode(BlockResults.self, data).results
        return results.mapValues { $0 == "success" ? .success : .failed(ChatClientError.Code(wire: $0)) }
    }

    // MARK: channels

    /// `channel.create`. Not repeated after a lost connection unless `distinct` (a repeat
    /// could create a second channel): such a call fails with `.connectionFailed`.
    public func createChannel(type: ChannelType = .group, userIDs: [String], name: String? = nil, distinct: Bool = false,
                              pushFromBlockedUsers: Bool? = nil) async throws -> Channel {
        var params: [String: any Sendable] = ["channelType": type.rawValue, "userIds": userIDs, "distinct": distinct]
        if let name { params["name"] = name }
        if let pushFromBlockedUsers { params["pushFromBlockedUsers"] = pushFromBlockedUsers }
        return try decode(Channel.self, try await request("channel.create", params, retriable: distinct))
    }

    public func channel(_ channelID: String) async throws -> Channel {
        try decode(Channel.self, try await request("channel.get", ["channelId": channelID]))
    }

    /// `channel.list`: newest activity first, with each channel's unread count.
    public func channels(limit: Int = 20, cursor: String? = nil) async throws -> Page<Channel> {
        var params: [String: any Sendable] = ["limit": limit]
        if let cursor { params["cursor"] = cursor }
        let page = try decode(ChannelsPage.self, try await request("channel.list", params))
        return Page(items: page.channels, next: page.next)
    }

    public func invite(_ userIDs: [String], to channelID: String) async throws -> Channel {
        try decode(Channel.self, try await request("channel.invite", ["channelId": channelID, "userIds": userIDs]))
    }

    public func join(_ channelID: String) async throws -> Channel {
        try decode(Channel.self, try await request("channel.join", ["channelId": channelID]))
    }

    public func leave(_ channelID: String) async throws {
        _ = try await request("channel.leave", ["channelId": channelID])
    }

    /// `channel.update`; what is left nil keeps its value. Renaming is open to every member,
    /// `pushFromBlockedUsers` to the creator; `frozen` and `slowModeSeconds` (0–3600, 0 turns
    /// it off) to owners and moderators (§16), others get `.forbidden`.
    public func updateChannel(_ channelID: String, name: String? = nil, pushFromBlockedUsers: Bool? = nil,
                              frozen: Bool? = nil, slowModeSeconds: Int? = nil) async throws -> Channel {
        var params: [String: any Sendable] = ["channelId": channelID]
        if let name { params["name"] = name }
        if let pushFromBlockedUsers { params["pushFromBlockedUsers"] = pushFromBlockedUsers }
        if let frozen { params["frozen"] = frozen }
        if let slowModeSeconds { params["slowModeSeconds"] = slowModeSeconds }
        return try decode(Channel.self, try await request("channel.update", params))
    }

    // MARK: typing, read state, presence (§14)

    public func startTyping(in channelID: String) async throws {
        _ = try await request("typing.start", ["channelId": channelID])
    }

    public func stopTyping(in channelID: String) async throws {
        _ = try await request("typing.stop", ["channelId": channelID])
    }

    /// `channel.markRead`: everything up to `seq` read (a mark never moves back).
    public func markRead(_ channelID: String, seq: Int64) async throws -> ReadState {
        try decode(ReadState.self, try await request("channel.markRead", ["channelId": channelID, "seq": seq]))
    }

    /// `presence.subscribe` (1–100 ids): their state now, and `.presence` events from then on,
    /// kept across reconnects.
    public func subscribePresence(_ userIDs: [String]) async throws -> [Presence] {
        let result = try decode(PresenceResult.self, try await request("presence.subscribe", ["userIds": userIDs]))
        presenceFollowed.formUnion(userIDs)
        return result.users
    }

    public func unsubscribePresence(_ userIDs: [String]) async throws {
        presenceFollowed.subtract(userIDs)
        _ = try await request("presence.unsubscribe", ["userIds": userIDs])
    }
}

struct MeResult: Decodable {
    var user: User
    var blockedUserIds: [String]
}

struct UsersPage: Decodable {
    var users: [User]
    var next: String?
}

struct ChannelsPage: Decodable {
    var channels: [Channel]
    var next: String?
}

struct BlockResults: Decodable {
    var results: [String: String]
}

struct PresenceResult: Decodable {
    var users: [Presence]
}
