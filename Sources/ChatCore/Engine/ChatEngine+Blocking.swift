/// A blocker and one user it blocks or unblocks.
struct BlockPair: Hashable, Sendable {
    var blocker: UserID
    var blocked: UserID
}

/// One target's write of a `user.block` / `user.unblock` request.
struct BlockWrite: Sendable {
    var pair: BlockPair
    var isBlocked: Bool
    var batch: UInt64
}

/// A block request waiting for its targets' writes: it is answered once all are settled,
/// each target's result saying how its own write went.
struct BlockBatch: Sendable {
    var requester: Requester
    var results: [UserID: String]
    var waiting: Int
    var committed = 0
}

extension ChatEngine {
    /// Whether `blocker` has blocked `blocked` once the writes in flight are settled.
    func effectiveBlock(_ pair: BlockPair) -> Bool {
        pendingBlocks[pair]?.isBlocked ?? directory.blocks.hasBlocked(pair.blocker, pair.blocked)
    }

    /// `user.block` / `user.unblock` (PROTOCOL.md §4, §5) of `targets` by `blocker`, from
    /// a client or the admin API. Each target that changes is written on its own; the
    /// change reaches memory, the live sessions' block sets and the blocker's other
    /// connections (`user.blocked`) when that write commits, and the reply follows the
    /// last write.
    public mutating func setBlocks(_ targets: [UserID], blocked isBlocked: Bool, by blocker: UserID,
                                   for requester: Requester, now: Milliseconds) -> [EngineEffect] {
        var results: [UserID: String] = [:]
        var changes: [BlockPair] = []
        for target in targets where results[target] == nil {
            if target == blocker {
                results[target] = ErrorCode.cannotBlockSelf.rawValue
            } else if directory.users[target] == nil {
                results[target] = ErrorCode.userNotFound.rawValue
            } else {
                results[target] = "success"
                let pair = BlockPair(blocker: blocker, blocked: target)
                if effectiveBlock(pair) != isBlocked { changes.append(pair) }
            }
        }
        guard !changes.isEmpty else { return [.reply(requester, .blockResults(results))] }
        lastBatchID &+= 1
        blockBatches[lastBatchID] = BlockBatch(requester: requester, results: results, waiting: changes.count)
        var effects: [EngineEffect] = []
        for pair in changes {
            let write = nextWriteID()
            blockWrites[write] = BlockWrite(pair: pair, isBlocked: isBlocked, batch: lastBatchID)
            pendingBlocks[pair] = (isBlocked, (pendingBlocks[pair]?.writes ?? 0) + 1)
            effects.append(.persist(write, .setBlock(blocker: pair.blocker, blocked: pair.blocked, isBlocked: isBlocked, at: now)))
        }
        return effects
    }

    mutating func blockCommitted(_ write: BlockWrite, _ outcome: WriteOutcome) -> [EngineEffect] {
        let pair = write.pair
        if let pending = pendingBlocks[pair] {
            pendingBlocks[pair] = pending.writes > 1 ? (pending.isBlocked, pending.writes - 1) : nil
        }
        var effects: [EngineEffect] = []
        let committed = outcome != .failed
        if committed {
            if write.isBlocked {
                directory.blocks.block(pair.blocker, pair.blocked)
            } else {
                directory.blocks.unblock(pair.blocker, pair.blocked)
            }
            effects.append(.setBlock(blocker: numbered(pair.blocker), blocked: numbered(pair.blocked), isBlocked: write.isBlocked))
            effects.append(.log(.info, write.isBlocked ? "user.block" : "user.unblock",
                                ["user": .text(pair.blocker), "target": .text(pair.blocked)]))
        }
        guard var batch = blockBatches[write.batch] else { return effects }
        if committed {
            batch.committed += 1
            effects.append(.publishToUsers([pair.blocker], payload: Self.blockEvent(pair.blocked, isBlocked: write.isBlocked),
                                           excluding: batch.requester.session))
        } else {
            batch.results[pair.blocked] = ErrorCode.internalError.rawValue
        }
        batch.waiting -= 1
        guard batch.waiting == 0 else {
            blockBatches[write.batch] = batch
            return effects
        }
        blockBatches[write.batch] = nil
        if batch.committed == 0 {
            effects.append(.reply(batch.requester, .failure(ChatError(.internalError, "storage failed; retry"))))
        } else {
            effects.append(.reply(batch.requester, .blockResults(batch.results)))
        }
        return effects
    }

    /// `user.blocked` / `user.unblocked` `{"userId":…}`, for the blocker's other connections.
    static func blockEvent(_ target: UserID, isBlocked: Bool) -> [UInt8] {
        WireEncoding.event(isBlocked ? "user.blocked" : "user.unblocked") { w in
            w.beginObject()
            w.key("userId"); w.string(target)
            w.endObject()
        }
    }
}
