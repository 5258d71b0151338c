import ChatCore

/// How a store judges a new message against its channel as committed (§16), the same in
/// every backend. The engine judged it against its own copy of the channel, which on
/// another node of a cluster may not yet hold a ban or a freeze committed a moment
/// earlier; the store, where writes serialize, judges again so that a ban or freeze is in
/// force for every message that commits after it.
public struct SendAdmission: Sendable {
    /// What the store does with the message.
    public enum Verdict: Sendable, Equatable {
        case refuse(ChangeRefusal)
        /// Store it; `hiddenFromEveryone`: as heard by its sender alone (`*`).
        case store(hiddenFromEveryone: Bool)
    }

    /// The channel's moderation fields as stored (no members): its rules for roles and bans
    /// are `Channel.role(of:)` and `Channel.ban(on:at:)`.
    public let channel: Channel

    /// Reads the channel row's columns. The roles matter only while the channel is frozen,
    /// so they are decoded only then.
    public init(channelID: ChannelID, createdBy: UserID, frozen: Bool, rolesJSON: String, bansJSON: String) {
        channel = Channel(id: channelID, type: .group, members: [], createdAt: 0, createdBy: createdBy,
                          roles: frozen ? ColumnCoding.decodeRoles(rolesJSON) : [:], frozen: frozen,
                          bans: ColumnCoding.decodeBans(bansJSON))
    }

    /// The verdict on `message` from a sender who is (or is not) a member as committed and
    /// has the app-wide ban `userBan`: a non-member is refused, so is a plain member of a
    /// frozen channel; a sender shadow-banned (from the channel or app-wide) when the message
    /// was made is heard by nobody else.
    public func verdict(on message: Message, senderIsMember: Bool, userBan: Ban?) -> Verdict {
        guard senderIsMember else { return .refuse(.senderNotInChannel) }
        if channel.frozen && !channel.role(of: message.senderID).moderates { return .refuse(.channelFrozen) }
        let at = message.createdAt
        let shadow = channel.ban(on: message.senderID, at: at)?.shadow == true
            || (userBan.map { $0.shadow && $0.isInForce(at: at) } ?? false)
        return .store(hiddenFromEveryone: shadow)
    }
}
