/// Start-up: the stored state enters the engine here, before the first request.
extension ChatEngine {
    /// The store's snapshot (see `ChatDirectory.load`), read in this engine's blocking mode.
    public mutating func load(users: [User], channels: [Channel], lastMessages: [Message],
                              lastVisible: [(viewer: UserID, message: Message)], blocks: [(blocker: UserID, blocked: UserID)],
                              readMarks: [ReadMark], messagesAfterMarks: [MessageHeader], versions: [ChannelID: Int64] = [:]) {
        directory.load(users: users, channels: channels, lastMessages: lastMessages, lastVisible: lastVisible, blocks: blocks,
                       readMarks: readMarks, messagesAfterMarks: messagesAfterMarks, blockingMode: settings.blockingMode,
                       versions: versions)
    }

    /// Strict mode derives each member's `lastMessage` from the newest message of every
    /// sender the member is not blocked with (`MessagesBySender`); the snapshot holds only
    /// each channel's newest, so the channels with messages where two members are blocked
    /// with each other need their recent messages read again (`recordSendersNewest`).
    public func channelsNeedingSendersNewest() -> [ChannelID] {
        guard settings.blockingMode == .strict else { return [] }
        return directory.channels.values.filter { channel in
            guard directory.newestMessage(of: channel.id) != nil else { return false }
            let members = Set(channel.members)
            return members.contains { !directory.blockedEitherWay(with: $0).isDisjoint(with: members) }
        }.map(\.id).sorted()
    }

    /// Stored messages that may be their senders' newest in their channels (strict mode).
    public mutating func recordSendersNewest(_ messages: [Message]) {
        for message in messages { directory.recordSenderNewest(message) }
    }
}
