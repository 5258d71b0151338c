import ChatCore

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
    /// (or the newest overall), or the first `limit` after `afterSeq`; with `thread`, only
    /// the replies to that message. Messages hidden from `viewer` are left out (stored hidden
    /// from it, or hidden from everyone but a sender other than it: `Message.isHidden(from:)`).
    /// Runs on a reader queue; `completion` runs there.
    func history(channelID: ChannelID, viewer: UserID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int, thread: Int64?,
                 completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void)

    /// The first `limit` messages of a channel created or changed after `afterVersion`, in
    /// ascending `version` (§15 `message.changes`), each in its latest state; those hidden
    /// from `viewer` are left out.
    func changes(channelID: ChannelID, viewer: UserID, afterVersion: Int64, limit: Int,
                 completion: @escaping @Sendable (Result<[Message], StoreError>) -> Void)

    /// For the messages of `seqs`: the reactions of `users`, and the reply tallies of their
    /// threads whose sender is one of `users` or that are hidden from `viewer` (including those
    /// hidden from everyone but another sender, which carry `hiddenFrom` `*`).
    func attributions(channelID: ChannelID, seqs: ClosedRange<Int64>, users: Set<UserID>, viewer: UserID,
                      completion: @escaping @Sendable (Result<MessageAttributions, StoreError>) -> Void)

    /// The stored messages of `seqs` with all their reactions and reply tallies (missing
    /// seqs are left out).
    func messageStates(channelID: ChannelID, seqs: [Int64],
                       completion: @escaping @Sendable (Result<[MessageState], StoreError>) -> Void)

    /// The message `sender` stored with `clientMessageID`, if any (idempotent retries).
    func message(sender: UserID, clientMessageID: String,
                 completion: @escaping @Sendable (Result<Message?, StoreError>) -> Void)

    /// The stored users among `ids` (in a cluster, users another node created that this
    /// node has not heard of yet).
    func users(_ ids: [UserID], completion: @escaping @Sendable (Result<[User], StoreError>) -> Void)

    /// Stored reports of messages (§16 `insertFlag`) in ascending `id`: the first `limit`
    /// after `afterID`, or from the first. Runs on a reader queue; `completion` runs there.
    func flags(limit: Int, afterID: Int64?, completion: @escaping @Sendable (Result<[Flag], StoreError>) -> Void)

    /// The stored state of `channels`' streams (`ChannelStreams`: newest messages, views,
    /// read marks, unread headers, versions), read at one point in time: what a cluster node
    /// installs for the channels it starts following.
    func streams(of channels: [ChannelID], completion: @escaping @Sendable (Result<ChannelStreams, StoreError>) -> Void)

    /// Waits until every enqueued write has committed; for shutdown and tests.
    func flush()
}
