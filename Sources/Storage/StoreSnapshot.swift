import ChatCore

/// Everything the gateway keeps in memory, loaded once at start.
public struct StoreSnapshot: Sendable {
    public var users: [User] = []
    public var channels: [Channel] = []
    /// Each channel's version (§15): its latest stored change.
    public var channelVersions: [ChannelID: Int64] = [:]
    /// The last message of each channel that has one.
    public var lastMessages: [Message] = []
    /// For channels whose newest message is hidden from a member (in practice
    /// 1-to-1 channels): that member's newest visible message. A member listed
    /// nowhere here sees the channel's last message; a member from whom the last
    /// message is hidden and who has no entry here sees no message at all. A newest
    /// message hidden from everyone but its sender (§16) has the viewer `*`, with the
    /// newest message before it that is not hidden from everyone. No entry ever holds a
    /// message hidden from its viewer.
    public var lastVisibleMessages: [(viewer: UserID, message: Message)] = []
    public var blocks: [(blocker: UserID, blocked: UserID)] = []
    /// Every member's read mark.
    public var readMarks: [ReadMark] = []
    /// The messages after the oldest read mark of each channel (at most the channel's newest
    /// `unreadWindow`), ascending seq per channel: what unread counts are rebuilt from.
    public var messagesAfterMarks: [MessageHeader] = []

    /// How far back start-up looks for messages that do not count as unread; a mark older than
    /// that counts the member's own messages before the window as unread.
    public static let unreadWindow: Int64 = 10_000

    public init() {}

    /// Takes the stream parts of every channel (`ChannelStreams`, read by the same queries a
    /// cluster node runs for the channels it starts following).
    public mutating func take(_ streams: ChannelStreams) {
        lastMessages = streams.lastMessages
        lastVisibleMessages = streams.lastVisible
        readMarks = streams.readMarks
        messagesAfterMarks = streams.messagesAfterMarks
        channelVersions = streams.versions
    }
}
