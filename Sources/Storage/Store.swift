import ChatCore

public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Everything the gateway keeps in memory, loaded once at start.
public struct StoreSnapshot: Sendable {
    public var users: [User] = []
    public var channels: [Channel] = []
    /// The last message of each channel that has one.
    public var lastMessages: [Message] = []
    /// For channels whose newest message is hidden from a member (in practice
    /// 1-to-1 channels): that member's newest visible message. A member listed
    /// nowhere here sees the channel's last message; a member from whom the last
    /// message is hidden and who has no entry here sees no message at all.
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
}

/// Persistence behind the gateway (DESIGN.md `Storage`). Writes are group
/// committed: `enqueue` returns at once and `completion` runs after the
/// transaction holding the write has committed (or failed). Reads run on their
/// own connection and never wait for the writer.
public protocol Store: Sendable {
    /// Loads the whole in-memory state at start-up.
    func loadSnapshot() throws(StoreError) -> StoreSnapshot

    /// Queues a write for the next group commit. Completions run in enqueue order,
    /// on the store's writer thread.
    func enqueue(_ write: StoreWrite, completion: @escaping @Sendable (Result<StoreWriteResult, StoreError>) -> Void)

    /// Messages of a channel in ascending `seq`: the newest `limit` before `beforeSeq`
    /// (or the newest overall), or the first `limit` after `afterSeq`. Messages hidden
    /// from `viewer` are left out. Runs on a reader queue; `completion` runs there.
    func history(channelID: ChannelID, viewer: UserID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int,
                 completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void)

    /// The message `sender` stored with `clientMessageID`, if any (idempotent retries).
    func message(sender: UserID, clientMessageID: String,
                 completion: @escaping @Sendable (Result<Message?, StoreError>) -> Void)

    /// The stored users among `ids` (in a cluster, users another node created that this
    /// node has not heard of yet).
    func users(_ ids: [UserID], completion: @escaping @Sendable (Result<[User], StoreError>) -> Void)

    /// Waits until every enqueued write has committed; for shutdown and tests.
    func flush()
}
