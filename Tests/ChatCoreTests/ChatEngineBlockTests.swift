import Testing
@testable import ChatCore

/// `user.block` / `user.unblock` through the engine alone: memory changes only with what
/// committed, a retry after a failed write writes again, and each target's result is its
/// own write's.
@Suite("ChatEngine blocks")
struct ChatEngineBlockTests {
    static let alice = Requester.session(1, requestID: .number("7"))

    @Test("a block is written, and reaches memory, the session block sets, the event and the reply only when it commits")
    func appliedOnCommit() {
        var engine = makeEngine(users: ["alice", "bob"])
        let asked = engine.setBlocks(["bob"], blocked: true, by: "alice", for: Self.alice, now: 100)
        #expect(asked.persisted.map(\.write) == [.setBlock(blocker: "alice", blocked: "bob", isBlocked: true, at: 100)])
        #expect(asked.replies.isEmpty && asked.blockChanges.isEmpty && asked.published.isEmpty)
        #expect(!engine.directory.blocks.hasBlocked("alice", "bob"), "applied before its write committed")

        let done = engine.committed(asked.persisted[0].id, .committed(.done))
        #expect(engine.directory.blocks.hasBlocked("alice", "bob"))
        #expect(done.blockChanges.map { "\($0.blocker)>\($0.blocked):\($0.isBlocked)" } == ["alice>bob:true"])
        #expect(done.published.map(\.text) == [#"{"type":"event","event":"user.blocked","data":{"userId":"bob"}}"#])
        #expect(done.published.first?.users == ["alice"] && done.published.first?.excluding == 1)
        #expect(done.replies.map(\.reply) == [.blockResults(["bob": "success"])])
        #expect(done.replies.first?.to == Self.alice)
        // The session block sets change before the reply leaves (PROTOCOL.md §5: once the reply
        // arrived, nothing from bob reaches alice).
        let order = done.map { effect -> String in
            switch effect {
            case .setBlock: return "hub"
            case .reply: return "reply"
            default: return "other"
            }
        }.filter { $0 != "other" }
        #expect(order == ["hub", "reply"])
        #expect(engine.writesInFlight == 0)
    }

    @Test("a failed write leaves memory as it was, answers ERR_INTERNAL, and the retry writes again")
    func failedWriteIsRetried() {
        var engine = makeEngine(users: ["alice", "bob"])
        let first = engine.setBlocks(["bob"], blocked: true, by: "alice", for: Self.alice, now: 100)
        let failed = engine.committed(first.persisted[0].id, .failed)
        #expect(!engine.directory.blocks.hasBlocked("alice", "bob"))
        #expect(failed.blockChanges.isEmpty && failed.published.isEmpty)
        #expect(failed.replies.map(\.reply) == [.failure(ChatError(.internalError, "storage failed; retry"))])

        let retry = engine.setBlocks(["bob"], blocked: true, by: "alice", for: Self.alice, now: 200)
        #expect(retry.persisted.map(\.write) == [.setBlock(blocker: "alice", blocked: "bob", isBlocked: true, at: 200)],
                "the retry found nothing to change and wrote nothing")
        let done = engine.committed(retry.persisted[0].id, .committed(.done))
        #expect(engine.directory.blocks.hasBlocked("alice", "bob"))
        #expect(done.replies.map(\.reply) == [.blockResults(["bob": "success"])])
    }

    @Test("each target's result is its own write's: one fails, one commits, the reply waits for both")
    func resultPerTarget() {
        var engine = makeEngine(users: ["alice", "bob", "carol"])
        let asked = engine.setBlocks(["bob", "carol"], blocked: true, by: "alice", for: Self.alice, now: 100)
        #expect(asked.persisted.count == 2)
        let bob = asked.persisted[0].id, carol = asked.persisted[1].id
        let afterBob = engine.committed(bob, .failed)
        #expect(afterBob.replies.isEmpty, "answered before carol's write settled")
        let afterCarol = engine.committed(carol, .committed(.done))
        #expect(afterCarol.replies.map(\.reply) == [.blockResults(["bob": "ERR_INTERNAL", "carol": "success"])])
        #expect(!engine.directory.blocks.hasBlocked("alice", "bob"))
        #expect(engine.directory.blocks.hasBlocked("alice", "carol"))
        // The reply follows the last write whatever order they settle in.
        var other = ChatEngineBlockTests.blockTwo()
        let answered = other.engine.committed(other.writes[1], .committed(.done))
        #expect(answered.replies.isEmpty)
        let last = other.engine.committed(other.writes[0], .committed(.done))
        #expect(last.replies.map(\.reply) == [.blockResults(["bob": "success", "carol": "success"])])
    }

    static func blockTwo() -> (engine: ChatEngine, writes: [WriteID]) {
        var engine = makeEngine(users: ["alice", "bob", "carol"])
        let asked = engine.setBlocks(["bob", "carol"], blocked: true, by: "alice", for: alice, now: 100)
        return (engine, asked.persisted.map(\.id))
    }

    @Test("self, unknown users and blocks that already hold answer at once without a write")
    func nothingToWrite() {
        var engine = makeEngine(users: ["alice", "bob"])
        let set = engine.setBlocks(["bob"], blocked: true, by: "alice", for: Self.alice, now: 1)
        _ = engine.committed(set.persisted[0].id, .committed(.done))
        let effects = engine.setBlocks(["alice", "nobody", "bob", "bob"], blocked: true, by: "alice", for: Self.alice, now: 2)
        #expect(effects.persisted.isEmpty)
        #expect(effects.replies.map(\.reply) == [.blockResults([
            "alice": "ERR_CANNOT_BLOCK_SELF", "nobody": "ERR_UID_NOT_FOUND", "bob": "success",
        ])])
        let unblockNobody = engine.setBlocks(["alice"], blocked: false, by: "bob", for: .admin(1), now: 3)
        #expect(unblockNobody.persisted.isEmpty)
        #expect(unblockNobody.replies.map(\.reply) == [.blockResults(["alice": "success"])])
    }

    @Test("a block and an unblock both in flight: the unblock is written too, and the last write wins in memory as on disk")
    func blockThenUnblockInFlight() {
        var engine = makeEngine(users: ["alice", "bob"])
        let block = engine.setBlocks(["bob"], blocked: true, by: "alice", for: Self.alice, now: 1)
        let unblock = engine.setBlocks(["bob"], blocked: false, by: "alice", for: Self.alice, now: 2)
        #expect(unblock.persisted.map(\.write) == [.setBlock(blocker: "alice", blocked: "bob", isBlocked: false, at: 2)],
                "decided against the directory, the unblock found nothing to undo")
        // A third request while both are in flight sees the unblock's value.
        let again = engine.setBlocks(["bob"], blocked: false, by: "alice", for: Self.alice, now: 3)
        #expect(again.persisted.isEmpty)
        _ = engine.committed(block.persisted[0].id, .committed(.done))
        #expect(engine.directory.blocks.hasBlocked("alice", "bob"))
        _ = engine.committed(unblock.persisted[0].id, .committed(.done))
        #expect(!engine.directory.blocks.hasBlocked("alice", "bob"))
        // The same with the block's write failing: disk and memory both end unblocked.
        var failing = ChatEngineBlockTests.inFlightPair()
        _ = failing.engine.committed(failing.block, .failed)
        _ = failing.engine.committed(failing.unblock, .committed(.done))
        #expect(!failing.engine.directory.blocks.hasBlocked("alice", "bob"))
        let fresh = failing.engine.setBlocks(["bob"], blocked: true, by: "alice", for: Self.alice, now: 9)
        #expect(fresh.persisted.count == 1, "nothing left in flight: a new block is written")
    }

    static func inFlightPair() -> (engine: ChatEngine, block: WriteID, unblock: WriteID) {
        var engine = makeEngine(users: ["alice", "bob"])
        let block = engine.setBlocks(["bob"], blocked: true, by: "alice", for: alice, now: 1)
        let unblock = engine.setBlocks(["bob"], blocked: false, by: "alice", for: alice, now: 2)
        return (engine, block.persisted[0].id, unblock.persisted[0].id)
    }

    @Test("the admin API's block gets the same results and emits the event to every connection of the blocker")
    func adminBlock() {
        var engine = makeEngine(users: ["alice", "bob"])
        let asked = engine.setBlocks(["bob"], blocked: true, by: "alice", for: .admin(4), now: 1)
        let done = engine.committed(asked.persisted[0].id, .committed(.done))
        #expect(done.replies.first?.to == .admin(4))
        #expect(done.published.first?.excluding == nil)
    }
}
