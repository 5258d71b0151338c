/// What the fan-out of one sender's message in one channel needs from the
/// block graph: the members blocked with the sender either way, and the members
/// whose channel list the message must not move. Derived once per (sender,
/// channel) and reused until a block or a membership changes, so a message
/// from a sender with many blocks costs two dictionary lookups, not a walk.
struct SenderRelations: Sendable {
    /// Members blocked with the sender either way; nil when none (no per-recipient check).
    var related: Set<UserNumber>?
    /// Members whose channel list the message does not move (§5; strict mode: both ways).
    var listUnmoved: Set<UserID>
}

/// Dense per-process numbers for user ids, so the fan-out checks blocked sets
/// with integer lookups instead of hashing strings per recipient.
public typealias UserNumber = UInt32

/// Caches `SenderRelations` per (sender, channel); emptied when the block graph
/// or any channel's membership changed since it was filled.
struct SenderRelationsCache: Sendable {
    private struct Key: Hashable {
        var sender: UserID
        var channel: ChannelID
    }

    private var entries: [Key: SenderRelations] = [:]
    private var blockRevision: UInt64 = 0
    private var membershipRevision: UInt64 = 0
    /// Bounds the memory of a gateway with many senders: past this many entries it starts over.
    private let capacity = 100_000

    /// The entry for (sender, channel), after emptying the cache if blocks or memberships moved.
    mutating func cached(sender: UserID, channel: ChannelID, directory: ChatDirectory) -> SenderRelations? {
        if blockRevision != directory.blocks.revision || membershipRevision != directory.membershipRevision
            || entries.count >= capacity {
            entries.removeAll(keepingCapacity: true)
            blockRevision = directory.blocks.revision
            membershipRevision = directory.membershipRevision
        }
        return entries[Key(sender: sender, channel: channel)]
    }

    mutating func store(_ relations: SenderRelations, sender: UserID, channel: ChannelID) {
        entries[Key(sender: sender, channel: channel)] = relations
    }
}
