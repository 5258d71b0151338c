import Testing
@testable import ChatCore

/// PROTOCOL.md §15 "Blocks cover every kind of event", as engine decisions: every event kind
/// (reaction, edit, delete, reply, reply count, mention) × channel kind × blocking mode ×
/// block relation × the viewer's `hideBlocked`, checked live, in history, in
/// `message.changes` and in the counts, against a table written from the protocol's text
/// (not from `DeliveryPolicy`): where B's new messages would not reach A's connection, none
/// of B's lifecycle events, reactions or replies do either, and B is never told.
@Suite("Lifecycle block table")
struct LifecycleBlockTableTests {
    enum Relation: String, CaseIterable {
        case none, aBlockedB, bBlockedA, both
    }

    struct Case: CustomStringConvertible {
        var kind: DeliveryPolicy.ChannelKind
        var mode: DeliveryPolicy.Mode
        var relation: Relation
        var hideBlocked: Bool
        var description: String { "\(kind) \(mode) \(relation.rawValue) hideBlocked=\(hideBlocked)" }

        /// §5's history column: whether B's messages, replies included, stay out of A's history
        /// (open channels show them in history whatever the connection hides live).
        var hiddenInHistory: Bool {
            let aBlockedB = relation == .aBlockedB || relation == .both
            let bBlockedA = relation == .bBlockedA || relation == .both
            switch mode {
            case .strict: return aBlockedB || bBlockedA
            case .standard: return aBlockedB && (kind == .oneToOne || (kind == .group && hideBlocked))
            }
        }

        /// §5 and §15 in words: whether B's doings are hidden from A's connection.
        var hidden: Bool {
            let aBlockedB = relation == .aBlockedB || relation == .both
            let bBlockedA = relation == .bBlockedA || relation == .both
            switch mode {
            case .strict: return aBlockedB || bBlockedA
            case .standard:
                guard aBlockedB else { return false }
                return kind == .oneToOne || hideBlocked
            }
        }
    }

    static let cases: [Case] = DeliveryPolicy.ChannelKind.allCases.flatMap { kind in
        DeliveryPolicy.Mode.allCases.flatMap { mode in
            Relation.allCases.flatMap { relation in
                [false, true].map { Case(kind: kind, mode: mode, relation: relation, hideBlocked: $0) }
            }
        }
    }

    /// A channel of the case's kind with alice ("A"), bob ("B") and, unless 1-to-1, carol;
    /// alice's message seq 1, bob's seq 2 and 3, carol's seq 4 (not in a 1-to-1), all
    /// before any block; then the case's blocks.
    static func world(_ c: Case) -> (LifecycleWorld, ChannelID, carolSeq: Int64?) {
        var world = LifecycleWorld(users: ["alice", "bob", "carol"],
                                   settings: ChatEngine.Settings(blockingMode: c.mode, reactionEventWindowMilliseconds: 0))
        world.connect("alice", hideBlocked: c.hideBlocked)
        world.connect("bob")
        world.connect("carol")
        let channel: ChannelID
        switch c.kind {
        case .oneToOne: channel = world.channel(.group, creator: "alice", members: ["bob"])
        case .group: channel = world.channel(.group, creator: "alice", members: ["bob", "carol"])
        case .open: channel = world.channel(.open, creator: "alice", members: ["bob", "carol"])
        }
        world.send("alice", channel, "a1")
        world.send("bob", channel, "b2")
        world.send("bob", channel, "b3")
        var carolSeq: Int64?
        if c.kind != .oneToOne {
            world.send("carol", channel, "c4")
            carolSeq = 4
        }
        if c.relation == .aBlockedB || c.relation == .both { world.block("alice", "bob") }
        if c.relation == .bBlockedA || c.relation == .both { world.block("bob", "alice") }
        world.clearEvents()
        return (world, channel, carolSeq)
    }

    static func message(_ list: [JSONValue], seq: Int64) -> JSONValue? {
        list.first { $0["seq"]?.int64Value == seq }
    }

    static func count(_ message: JSONValue?, _ kind: String) -> Int64 {
        message?["reactions"]?[kind]?.int64Value ?? 0
    }

    @Test("reactions of B: live events, counts live, in history and in message.changes; B's own view counts them", arguments: cases)
    func reactions(_ c: Case) {
        var (world, channel, carolSeq) = Self.world(c)
        let version = world.engine.directory.version(of: channel)
        // In strict mode a blocked pair does not see each other's messages: bob cannot react to alice's.
        let bobSeesAlice = !(c.mode == .strict && c.relation != .none)
        for seq: Int64 in [1] + (carolSeq.map { [$0] } ?? []) {
            let answer = world.change("bob", channel, seq, .addReaction("x"))
            let bobReacted = seq != 1 || bobSeesAlice
            #expect(answer?.errorCode == (bobReacted ? nil : .messageNotFound), "\(c): bob's reaction to seq \(seq)")
            let events = world.events("alice", "reaction.added")
            #expect(events.count == (c.hidden ? 0 : 1), "\(c): reaction.added of seq \(seq)")
            let shown = Self.message(world.history("alice", channel), seq: seq)
            #expect(Self.count(shown, "x") == (c.hidden ? 0 : 1), "\(c): count of seq \(seq) in alice's history")
            if bobReacted {
                #expect(Self.count(Self.message(world.history("bob", channel), seq: seq), "x") == 1, "\(c): bob's own count")
            }
            guard c.kind != .oneToOne else { continue }
            // carol's reaction counts for everyone and carries the counts as each recipient sees them.
            world.change("carol", channel, seq, .addReaction("x"))
            let carolEvent = world.events("alice", "reaction.added").last
            #expect(carolEvent?["reactions"]?["x"]?.int64Value == (c.hidden ? 1 : 2), "\(c): counts in carol's event")
            #expect(world.events("bob", "reaction.added").last?["reactions"]?["x"]?.int64Value == (bobReacted ? 2 : nil),
                    "\(c): bob hears carol where he sees the message")
            let changed = Self.message(world.changes("alice", channel, after: version), seq: seq)
            #expect(Self.count(changed, "x") == (c.hidden ? 1 : 2), "\(c): counts in message.changes")
            #expect(changed?["ownReactions"]?.arrayValue == [], "\(c): alice reacted with nothing")
        }
    }

    @Test("edits and deletes of B's messages: no event, and no way into history, where B is hidden", arguments: cases)
    func editsAndDeletes(_ c: Case) {
        var (world, channel, _) = Self.world(c)
        let version = world.engine.directory.version(of: channel)
        world.change("bob", channel, 2, .edit(MessageEdit(text: "edited during")))
        #expect(world.events("alice", "message.updated").count == (c.hidden ? 0 : 1), "\(c): edit event")
        let history = world.history("alice", channel)
        let edited = Self.message(history, seq: 2)
        if c.hiddenInHistory {
            // An edit cannot smuggle a message past a block: whatever A saw of seq 2, the
            // edited text never reaches it.
            #expect(edited?["text"]?.stringValue != "edited during", "\(c): edited text in alice's history")
        } else {
            #expect(edited?["text"]?.stringValue == "edited during", "\(c): edit in history")
        }
        let changed = world.changes("alice", channel, after: version)
        #expect(changed.contains { $0["text"]?.stringValue == "edited during" } == !c.hiddenInHistory, "\(c): edit in message.changes")
        world.change("bob", channel, 3, .delete)
        #expect(world.events("alice", "message.updated").count == (c.hidden ? 0 : 1), "\(c): delete event")
        #expect(world.events("bob", "message.updated").isEmpty, "\(c): the requesting connection gets the reply only")
        // After an unblock, an edit of a message hidden during the block does not reveal it.
        if c.kind == .oneToOne && c.hidden && c.mode == .standard {
            world.block("alice", "bob", false)
            if c.relation == .both { world.block("bob", "alice", false) }
            world.clearEvents()
            world.change("bob", channel, 2, .edit(MessageEdit(text: "after unblock")))
            #expect(world.events("alice", "message.updated").isEmpty, "\(c): edit after unblock of a message hidden for good")
            #expect(Self.message(world.history("alice", channel), seq: 2) == nil, "\(c): still hidden after unblock")
        }
    }

    @Test("replies of B: message.new, the parent's reply count live and in history, the thread", arguments: cases)
    func replies(_ c: Case) {
        var (world, channel, _) = Self.world(c)
        let reply = world.send("bob", channel, "re", parentSeq: 1)
        if c.mode == .strict && c.relation != .none {
            // bob does not see alice's message: no thread to reply in, and nothing reaches alice.
            #expect(reply == nil, "\(c): a reply to a message bob cannot see is refused")
            #expect(world.replies[world.sessions["bob"] ?? 0]?.errorCode == .badRequest)
            #expect(world.events("alice", "message.new").isEmpty && world.events("alice", "message.updated").isEmpty)
            return
        }
        #expect(reply?["parentSeq"]?.int64Value == 1, "\(c): stored as a reply")
        #expect(world.events("alice", "message.new").count == (c.hidden ? 0 : 1), "\(c): reply's message.new")
        let updates = world.events("alice", "message.updated")
        #expect(updates.count == (c.hidden ? 0 : 1), "\(c): parent's message.updated")
        if let update = updates.first {
            #expect(update["change"]?.stringValue == "reply")
            #expect(update["message"]?["replyCount"]?.int64Value == 1)
        }
        #expect(Self.message(world.history("alice", channel), seq: 1)?["replyCount"]?.int64Value == (c.hiddenInHistory ? 0 : 1),
                "\(c): replyCount in alice's history")
        #expect(world.history("alice", channel, thread: 1).count == (c.hiddenInHistory ? 0 : 1), "\(c): thread history")
        #expect(Self.message(world.history("bob", channel), seq: 1)?["replyCount"]?.int64Value == 1, "\(c): bob's own count")
        // carol's reply counts for alice in any case, and the count alice is sent leaves bob's out.
        if c.kind != .oneToOne {
            world.send("carol", channel, "re2", parentSeq: 1)
            let update = world.events("alice", "message.updated").last
            #expect(update?["message"]?["replyCount"]?.int64Value == (c.hiddenInHistory ? 1 : 2), "\(c): count after carol's reply")
        }
    }

    @Test("mentions of A by B push only where a plain message of B would, and leave no trace where B is hidden", arguments: cases)
    func mentions(_ c: Case) {
        guard c.kind != .open else { return }  // open channels never push
        var (world, channel, _) = Self.world(c)
        // alice goes offline: what reaches her now is push.
        world.run(world.engine.closeSession(world.sessions["alice"] ?? 0, now: world.now))
        world.pushes = []
        world.send("bob", channel, "hey @alice", mentions: ["alice"])
        let toAlice = world.pushes.filter { $0.userID == "alice" }
        // pushFromBlockedUsers is off: a group pushes from a blocked sender no more than a 1-to-1.
        let aBlockedB = c.relation == .aBlockedB || c.relation == .both
        let pushes = c.mode == .strict ? c.relation == .none : !aBlockedB
        #expect(toAlice.count == (pushes ? 1 : 0), "\(c): push")
        #expect(toAlice.allSatisfy { $0.mentioned }, "\(c): the push says alice was mentioned")
    }
}
