import Foundation

/// Typed calls for moderation (PROTOCOL.md §16): roles, channel bans, mutes and flags. Freeze
/// and slow mode are `updateChannel(_:frozen:slowModeSeconds:)`. The gateway decides who may
/// do what (`.forbidden` otherwise); a send it refuses under these rules fails with
/// `.channelFrozen`, or `.slowMode` with `retryAfterMs`.
extension ChatClient {
    // MARK: roles

    /// `channel.setRole`: an owner makes a member a `.moderator`, or a moderator a `.member`
    /// again (`.owner` is the backend's to give: `.badRequest`). The channel with its new `roles`.
    public func setRole(_ role: ChannelRole, for userID: String, in channelID: String) async throws -> Channel {
        let params: [String: any Sendable] = ["channelId": channelID, "userId": userID, "role": role.rawValue]
        return try decode(Channel.self, try await request("channel.setRole", params))
    }

    // MARK: channel bans

    /// `channel.ban` (owners and moderators): a plain ban takes the user out of the channel
    /// while it stands; a `shadow` ban keeps it in, answered as ever, but nothing it produces
    /// reaches anyone else. `until`: when the ban ends by itself (nil: at `unban`).
    public func ban(_ userID: String, in channelID: String, shadow: Bool = false, until: Date? = nil) async throws {
        var params: [String: any Sendable] = ["channelId": channelID, "userId": userID, "shadow": shadow]
        if let until { params["untilMs"] = Self.milliseconds(until) }
        _ = try await request("channel.ban", params)
    }

    /// `channel.unban`: lifts a ban (lifting none also succeeds). A plainly banned user is not
    /// put back; it may join or be invited again.
    public func unban(_ userID: String, in channelID: String) async throws {
        _ = try await request("channel.unban", ["channelId": channelID, "userId": userID])
    }

    // MARK: mutes (quiet: nobody else is ever shown them)

    /// `channel.mute`: its messages still arrive and count as unread, but never push this user
    /// (mentions included), until `until` or `unmuteChannel`. The channel with `muted` true.
    public func muteChannel(_ channelID: String, until: Date? = nil) async throws -> Channel {
        var params: [String: any Sendable] = ["channelId": channelID]
        if let until { params["untilMs"] = Self.milliseconds(until) }
        return try decode(Channel.self, try await request("channel.mute", params))
    }

    /// `channel.unmute`: the channel with `muted` false.
    public func unmuteChannel(_ channelID: String) async throws -> Channel {
        try decode(Channel.self, try await request("channel.unmute", ["channelId": channelID]))
    }

    /// `user.mute` (1–100 ids): their messages never push this user, their typing is not sent
    /// to it. A result per id, as for `block`: `.success`, or `.failed(.uidNotFound)`, or
    /// `.failed(.badRequest)` for the caller's own id.
    public func muteUsers(_ userIDs: [String]) async throws -> [String: BlockResult] {
        try blockResults(try await request("user.mute", ["userIds": userIDs]))
    }

    /// `user.unmute` (1–100 ids), a result per id as for `muteUsers`.
    public func unmuteUsers(_ userIDs: [String]) async throws -> [String: BlockResult] {
        try blockResults(try await request("user.unmute", ["userIds": userIDs]))
    }

    // MARK: flags

    /// `message.flag`: reports message `seq` to the app's backend with a `reason` of at most
    /// 500 characters. Flags share the change rate (`Options.retryRateLimited` waits it out).
    /// Not sent again after a lost connection (a repeat would file a second flag): such a call
    /// fails with `.connectionFailed`.
    public func flagMessage(_ seq: Int64, in channelID: String, reason: String? = nil) async throws {
        var params: [String: any Sendable] = ["channelId": channelID, "seq": seq]
        if let reason { params["reason"] = reason }
        _ = try await requestWaitingOutRateLimits("message.flag", params, retriable: false)
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
