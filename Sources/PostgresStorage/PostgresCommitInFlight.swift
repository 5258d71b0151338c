import ChatCore
import Storage

/// One group commit of `PostgresGroupCommitWriter` as the next one sees it: what its
/// transaction has locked, whether its first attempt committed, and when its writes are
/// answered. The next batch may start on another connection while this one commits
/// (`mayBeFollowed(by:)`); these signals keep the two in enqueue order.
final class PostgresCommitInFlight: Sendable {
    let writes: [StoreWrite?]
    /// The channels whose rows the first attempt locked; empty when it locked none (no new
    /// message, or it failed first). Set before the attempt writes anything.
    let lockedChannels = OneShot<[ChannelID]>()
    /// Whether the first attempt committed (false: rolled back, or its outcome is unknown).
    let firstAttemptCommitted = OneShot<Bool>()
    /// Every write has its final result (after a retry, if any).
    let finished = OneShot<Void>()
    /// Every completion has been called.
    let delivered = OneShot<Void>()

    private enum UniqueKey: Hashable {
        case messageID(MessageID)
        case clientMessageID(sender: UserID, String)
    }

    /// Only messages (and flush barriers): no block, membership or channel row written.
    private let isMessagesOnly: Bool
    /// What the `messages` table's unique indexes hold for these writes.
    private let uniqueKeys: Set<UniqueKey>

    init(writes: [StoreWrite?]) {
        self.writes = writes
        var isMessagesOnly = true
        var uniqueKeys: Set<UniqueKey> = []
        for write in writes {
            switch write {
            case nil:
                continue
            case .insertMessage(let message)?:
                uniqueKeys.insert(.messageID(message.id))
                if let clientMessageID = message.clientMessageID {
                    uniqueKeys.insert(.clientMessageID(sender: message.senderID, clientMessageID))
                }
            case .some:
                isMessagesOnly = false
            }
        }
        self.isMessagesOnly = isMessagesOnly
        self.uniqueKeys = uniqueKeys
    }

    /// Whether `next` may begin while this one commits. Both must hold messages only: a
    /// 1-to-1 message reads the block and membership rows (§5) and must see every such
    /// write enqueued before it, and a message may go to a channel created just before.
    /// They must share no message id and no `clientMessageId`: the later insert would wait
    /// on the earlier one's uncommitted index entry while the earlier batch waits for it.
    func mayBeFollowed(by next: PostgresCommitInFlight) -> Bool {
        isMessagesOnly && next.isMessagesOnly && uniqueKeys.isDisjoint(with: next.uniqueKeys)
    }

    /// An attempt has ended: the first one settles what the next batch waits on.
    func attemptEnded(committed: Bool) {
        lockedChannels.set([])
        firstAttemptCommitted.set(committed)
    }
}
