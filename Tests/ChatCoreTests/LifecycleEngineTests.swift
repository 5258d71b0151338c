import Testing
@testable import ChatCore

/// The engine's lifecycle mechanics (PROTOCOL.md §15) beyond the block table: the reaction
/// storm window, the viewer's own reactions in `message.updated`, unread counts of
/// tombstones, and its copy of a message when another node changed it.
@Suite("Lifecycle engine")
struct LifecycleEngineTests {
    @Test("a reaction storm: one event at once, the rest of the window as one event with the counts then; own devices hear each")
    func reactionWindow() {
        var world = LifecycleWorld(users: ["a", "b", "c", "d"], settings: ChatEngine.Settings(reactionEventWindowMilliseconds: 100))
        for user in ["a", "b", "c", "d"] { world.connect(user) }
        let channel = world.channel(.group, creator: "a", members: ["b", "c", "d"])
        world.send("a", channel, "storm")
        world.clearEvents()
        world.change("b", channel, 1, .addReaction("+1"))
        #expect(world.events("a", "reaction.added").count == 1, "the first reaction goes out at once")
        world.change("c", channel, 1, .addReaction("+1"))
        world.change("d", channel, 1, .addReaction("+1"))
        #expect(world.events("a", "reaction.added").isEmpty, "the rest of the window is held back")
        #expect(world.events("b", "reaction.added").isEmpty)
        world.run(world.engine.reactionWindowDue(channel, seq: 1))
        let flushed = world.events("a", "reaction.added")
        #expect(flushed.count == 1)
        #expect(flushed.first?["reactions"]?["+1"]?.int64Value == 3, "the counts as they are when the window ends")
        #expect(flushed.first?["userId"]?.stringValue == "d")
        // A window with nothing held back closes: the next reaction goes out at once again.
        world.run(world.engine.reactionWindowDue(channel, seq: 1))
        world.run(world.engine.reactionWindowDue(channel, seq: 1))
        world.clearEvents()
        world.change("b", channel, 1, .removeReaction("+1"))
        #expect(world.events("a", "reaction.removed").first?["reactions"]?["+1"]?.int64Value == 2)
    }

    @Test("a shared change rate (cluster): a change asks takeChangeRate; limited answers ERR_RATE_LIMITED with its wait, admitted goes on, no answer falls back to this node's bucket")
    func sharedChangeRate() {
        var world = LifecycleWorld(users: ["a", "b"], settings: ChatEngine.Settings(sharedUserRate: true, userChangesPerSecond: 10,
                                                                                   userChangeBurst: 1))
        world.connect("a")
        world.connect("b")
        let channel = world.channel(.group, creator: "a", members: ["b"])
        world.send("a", channel, "m")
        let session = world.sessions["b"] ?? 0
        func ask(_ kind: String) -> WriteID? {
            let effects = world.engine.requestChange(.addReaction(kind), channel: channel, seq: 1, by: "b", hideBlocked: false,
                                                     for: world.requester("b"), now: 2_000, monotonicNow: 2_000)
            guard case .takeChangeRate(let check, "b", 10, 1, 2_000)? = effects.first, effects.count == 1 else {
                Issue.record("no takeChangeRate: \(effects)")
                return nil
            }
            return check
        }
        guard let first = ask("x"), let second = ask("y"), let third = ask("z"), let fourth = ask("w") else { return }
        world.run(world.engine.changeRateTaken(first, .limited(retryAfterMs: 77), monotonicNow: 2_000))
        #expect(world.replies[session]?.errorCode == .rateLimited)
        if case .failure(let error)? = world.replies[session] { #expect(error.retryAfterMs == 77) }
        world.replies[session] = nil
        world.run(world.engine.changeRateTaken(second, .admitted, monotonicNow: 2_000))
        #expect(world.replies[session]?.errorCode == nil && world.replies[session] != nil, "admitted: on to the message")
        // Redis could not answer: this node's own bucket (burst 1) decides, once, then limits.
        world.replies[session] = nil
        world.run(world.engine.changeRateTaken(third, nil, monotonicNow: 2_000))
        #expect(world.replies[session]?.errorCode == nil && world.replies[session] != nil)
        world.run(world.engine.changeRateTaken(fourth, nil, monotonicNow: 2_000))
        #expect(world.replies[session]?.errorCode == .rateLimited)
        #expect(world.engine.changeRateTaken(fourth, .admitted, monotonicNow: 2_000).isEmpty, "answered once")
        #expect(world.reactions.count == 2, "y and z stored: \(world.reactions)")
    }

    @Test("a reaction window ends with every held reaction counted, whoever reacted last")
    func reactionWindowCountsHeldOnes() {
        var world = LifecycleWorld(users: ["a", "b", "c"], settings: ChatEngine.Settings(reactionEventWindowMilliseconds: 100))
        for user in ["a", "b", "c"] { world.connect(user) }
        let channel = world.channel(.group, creator: "a", members: ["b", "c"])
        world.send("a", channel, "m")
        world.change("b", channel, 1, .addReaction("x"))
        world.change("c", channel, 1, .addReaction("y"))
        world.change("c", channel, 1, .removeReaction("y"))
        world.clearEvents()
        world.run(world.engine.reactionWindowDue(channel, seq: 1))
        let flushed = world.events("a", "reaction.removed")
        #expect(flushed.count == 1)
        #expect(flushed.first?["reactions"]?.keys == ["x"])
    }

    @Test("message.updated of an edit and of a reply carries each reactor's own reactions; the others' none")
    func updatesCarryOwnReactions() {
        var world = LifecycleWorld(users: ["a", "b", "c"], settings: ChatEngine.Settings(reactionEventWindowMilliseconds: 0))
        for user in ["a", "b", "c"] { world.connect(user) }
        let channel = world.channel(.group, creator: "a", members: ["b", "c"])
        world.send("a", channel, "m")
        world.change("b", channel, 1, .addReaction("x"))
        world.clearEvents()
        world.change("a", channel, 1, .edit(MessageEdit(text: "m edited")))
        let edit = world.events("b", "message.updated").first
        #expect(edit?["change"]?.stringValue == "edit")
        #expect(edit?["message"]?["ownReactions"]?.arrayValue == [.string("x")], "b reacted: its own reaction in the edit")
        #expect(world.events("c", "message.updated").first?["message"]?["ownReactions"]?.arrayValue == [], "c reacted with nothing")
        world.send("c", channel, "re", parentSeq: 1)
        let reply = world.events("b", "message.updated").first
        #expect(reply?["change"]?.stringValue == "reply")
        #expect(reply?["message"]?["ownReactions"]?.arrayValue == [.string("x")], "b reacted: its own reaction in the reply count")
    }

    @Test("ReadStates: a seq uncounted out of order joins its neighbours and is never counted twice")
    func uncountAnywhere() {
        var reads = ReadStates()
        reads.load("a", channel: "c", lastReadSeq: 0)
        reads.uncounted(2, channel: "c", for: ["a"])
        reads.uncounted(6, channel: "c", for: ["a"])
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 8) == 6)
        reads.uncountedAnywhere(4, channel: "c")
        reads.uncountedAnywhere(4, channel: "c")
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 8) == 5)
        reads.uncountedAnywhere(3, channel: "c")
        reads.uncountedAnywhere(5, channel: "c")
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 8) == 3, "1, 7 and 8 count")
        reads.uncountedAnywhere(6, channel: "c")
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 8) == 3)
        reads.markRead("a", channel: "c", seq: 5)
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 8) == 2)
    }

    @Test("a replicated change that does not follow the engine's copy drops it; the message is read again before the event")
    func staleCopyIsReadAgain() {
        var world = LifecycleWorld(users: ["a", "b"], settings: ChatEngine.Settings(reactionEventWindowMilliseconds: 0))
        world.connect("a")
        world.connect("b")
        let channel = world.channel(.group, creator: "a", members: ["b"])
        world.send("a", channel, "m")
        world.change("b", channel, 1, .addReaction("x"))
        world.clearEvents()
        // Another node stored two reactions; this node heard only the second.
        var stored = world.messages[channel]?[0] ?? Message(id: "", channelID: channel, senderID: "a", text: "", createdAt: 0)
        let previous = stored.version
        stored.reactions["y"] = 1
        stored.reactions["z"] = 1
        stored.version = previous + 2
        world.messages[channel]?[0] = stored
        world.reactions.insert([channel, "1", "c", "y"])
        world.reactions.insert([channel, "1", "c", "z"])
        let missed = MessageChange(channelID: channel, seq: 1, actor: "c", at: world.now, action: .addReaction("z"))
        let event = BusEvent(node: "other", write: .changeMessage(missed), result: .changed(stored, previousVersion: previous + 1))
        let effects = world.engine.replicated(event, monotonicNow: world.now)
        #expect(effects.contains { if case .readMessageStates = $0 { return true } else { return false } })
        world.run(effects)
        let received = world.events("a", "reaction.added")
        #expect(received.count == 1)
        #expect(received.first?["reactions"]?.keys == ["x", "y", "z"], "the counts from the message read again")
    }
}

extension LifecycleEngineTests {
    @Test("1-to-1: an edit made during the block never reaches the blocker's channel list or unread count")
    func editDuringBlockLeavesTheListAlone() {
        var world = LifecycleWorld(users: ["a", "b"], settings: ChatEngine.Settings(reactionEventWindowMilliseconds: 0))
        world.connect("a")
        world.connect("b")
        let channel = world.channel(.group, creator: "a", members: ["b"])
        world.send("b", channel, "hello")
        world.run(world.engine.markRead(channel, seq: 1, by: "a", session: 1, for: world.requester("a")))
        world.block("a", "b")
        world.change("b", channel, 1, .edit(MessageEdit(text: "nasty")))
        #expect(world.engine.directory.lastMessage(of: channel, for: "a")?.text == "hello")
        #expect(world.engine.directory.lastMessage(of: channel, for: "b")?.text == "nasty")
        #expect(world.engine.directory.readState(of: channel, for: "a").unreadCount == 0)
    }
}

extension LifecycleEngineTests {
    @Test("message.updated carries each recipient's own reactions: reactors of one kind share a payload, others get theirs")
    func ownReactionsInUpdates() {
        var world = LifecycleWorld(users: ["a", "b", "c", "d"], settings: ChatEngine.Settings(reactionEventWindowMilliseconds: 0))
        for user in ["a", "b", "c", "d"] { world.connect(user) }
        let channel = world.channel(.group, creator: "a", members: ["b", "c", "d"])
        world.send("a", channel, "topic")
        world.change("b", channel, 1, .addReaction("+1"))
        world.change("c", channel, 1, .addReaction("+1"))
        world.change("d", channel, 1, .addReaction("🎉"))
        world.clearEvents()
        world.send("a", channel, "re", parentSeq: 1)
        func own(_ user: UserID) -> [String]? {
            world.events(user, "message.updated").first?["message"]?["ownReactions"]?.arrayValue?.compactMap(\.stringValue)
        }
        #expect(own("a") == [])
        #expect(own("b") == ["+1"])
        #expect(own("c") == ["+1"])
        #expect(own("d") == ["🎉"])
    }
}
