/// The stored state of some channels' streams, as a node installs it (`ChatDirectory.loadStreams`):
/// their newest messages, what members from whom a newest message is hidden see instead,
/// read marks, the messages after the oldest mark (for unread counts) and versions. The
/// start-up snapshot holds it for every channel; in a cluster a node reads it for the
/// channels it starts following.
public struct ChannelStreams: Sendable {
    /// The channels covered (those without a message too).
    public var channels: [ChannelID]
    /// The last message of each covered channel that has one.
    public var lastMessages: [Message]
    /// For a newest message hidden from a member: that member's newest visible message (the
    /// viewer `*` for a message hidden from everyone but its sender, §16).
    public var lastVisible: [(viewer: UserID, message: Message)]
    /// Every member's stored read mark.
    public var readMarks: [ReadMark]
    /// The messages after each channel's oldest read mark (at most its newest
    /// `StoreSnapshot.unreadWindow`), ascending seq per channel.
    public var messagesAfterMarks: [MessageHeader]
    /// Each channel's version (§15), where it is above 0.
    public var versions: [ChannelID: Int64]

    public init(channels: [ChannelID], lastMessages: [Message] = [], lastVisible: [(viewer: UserID, message: Message)] = [],
                readMarks: [ReadMark] = [], messagesAfterMarks: [MessageHeader] = [], versions: [ChannelID: Int64] = [:]) {
        self.channels = channels
        self.lastMessages = lastMessages
        self.lastVisible = lastVisible
        self.readMarks = readMarks
        self.messagesAfterMarks = messagesAfterMarks
        self.versions = versions
    }
}
