import Testing
@testable import ChatCore

/// Channel changes through the engine alone: nothing reaches memory before its write
/// commits, a failed write leaves no trace and its retry writes again, and changes to one
/// channel go one at a time.
@Suite("ChatEngine channels")
struct ChatEngineChannelTests {
    static let alice = Requester.session(1, requestID: .number("1"))
    static let bob = Requester.session(2, requestID: .number("2"))

    static func group(_ engine: inout ChatEngine, members: [UserID], distinct: Bool = false) -> (effects: [EngineEffect], id: ChannelID) {
        let asked = engine.changeChannel(.create(type: .group, userIDs: members, name: "g", distinct: distinct, pushFromBlockedUsers: nil),
                                         by: "alice", for: alice, now: 10)
        guard case .createChannel(let channel)? = asked.persisted.first?.write else { return (asked, "") }
        return (asked, channel.id)
    }

    @Test("channel.create: written first; the channel, the hub, the reply and channel.updated follow the commit")
    func createAppliedOnCommit() {
        var engine = makeEngine(users: ["alice", "bob"])
        let (asked, id) = Self.group(&engine, members: ["bob"])
        #expect(asked.count == 1 && asked.persisted.count == 1)
        #expect(engine.directory.channels[id] == nil, "a channel before its write committed")
        let done = engine.committed(asked.persisted[0].id, .committed(.done))
        #expect(engine.directory.channels[id]?.members == ["alice", "bob"])
        #expect(done.contains(.addToChannel(["alice", "bob"], id)))
        #expect(done.replies.first?.reply.members == ["alice", "bob"])
        // The owner is shown the channel's bans (§16): its own encoding.
        #expect(done.published.map(\.users) == [["alice"], ["bob"]])
        #expect(done.published.first?.excluding == 1)
        #expect(done.published.first?.text.contains("\"channel.updated\"") == true)
    }

    @Test("a failed channel.create leaves no phantom channel; the retry creates one")
    func failedCreate() {
        var engine = makeEngine(users: ["alice", "bob"])
        let (asked, id) = Self.group(&engine, members: ["bob"], distinct: true)
        let failed = engine.settle(asked, .failed)
        #expect(failed.replies.first?.reply.errorCode == .internalError)
        #expect(engine.directory.channels[id] == nil && engine.directory.channelIDs(of: "alice").isEmpty)
        #expect(!failed.contains { if case .addToChannel = $0 { return true } else { return false } })
        let (retry, retryID) = Self.group(&engine, members: ["bob"], distinct: true)
        #expect(retry.persisted.count == 1, "the distinct retry found the failed channel and wrote nothing")
        _ = engine.settle(retry, .committed(.done))
        #expect(engine.directory.channels[retryID]?.members == ["alice", "bob"])
    }

    @Test("two distinct creates of the same members in flight: the second waits and gets the first's channel, unwritten")
    func distinctCreatesOneChannel() {
        var engine = makeEngine(users: ["alice", "bob"])
        let (first, id) = Self.group(&engine, members: ["bob"], distinct: true)
        let second = engine.changeChannel(.create(type: .group, userIDs: ["bob"], name: "g", distinct: true, pushFromBlockedUsers: nil),
                                          by: "alice", for: Self.bob, now: 11)
        #expect(second.isEmpty, "decided before the first committed")
        let done = engine.settle(first, .committed(.done))
        let answers = done.replies
        #expect(answers.map(\.to) == [Self.alice, Self.bob])
        #expect(answers.compactMap { $0.reply.json?["id"]?.stringValue } == [id, id])
        #expect(done.persisted.isEmpty)
    }

    @Test("channel.join and channel.leave: a failed write changes nothing, the retry writes")
    func joinAndLeave() {
        var engine = makeEngine(users: ["alice", "bob"])
        let open = engine.changeChannel(.create(type: .open, userIDs: [], name: "o", distinct: false, pushFromBlockedUsers: nil),
                                        by: "alice", for: Self.alice, now: 1)
        _ = engine.settle(open, .committed(.done))
        guard let id = engine.directory.channelIDs(of: "alice").first else {
            Issue.record("no open channel")
            return
        }
        let join = engine.changeChannel(.join(id), by: "bob", for: Self.bob, now: 2)
        #expect(engine.settle(join, .failed).replies.first?.reply.errorCode == .internalError)
        #expect(engine.directory.channels[id]?.members == ["alice"])
        let rejoin = engine.changeChannel(.join(id), by: "bob", for: Self.bob, now: 3)
        #expect(rejoin.persisted.count == 1)
        let joined = engine.settle(rejoin, .committed(.done))
        #expect(joined.contains(.addToChannel(["bob"], id)))
        #expect(engine.directory.channels[id]?.members == ["alice", "bob"])

        let leave = engine.changeChannel(.leave(id), by: "bob", for: Self.bob, now: 4)
        _ = engine.settle(leave, .failed)
        #expect(engine.directory.channels[id]?.members == ["alice", "bob"], "left although the write failed")
        let releave = engine.changeChannel(.leave(id), by: "bob", for: Self.bob, now: 5)
        let left = engine.settle(releave, .committed(.done))
        #expect(left.contains(.removeFromChannel(["bob"], id)))
        #expect(left.replies.first.map { $0.reply == .result(Array("{}".utf8)) } == true)
        #expect(engine.directory.channels[id]?.members == ["alice"])
    }

    @Test("channel.invite: a failed write adds nobody; the retry writes and adds")
    func failedInvite() {
        var engine = makeEngine(users: ["alice", "bob", "carol"])
        let (created, id) = Self.group(&engine, members: ["bob"])
        _ = engine.settle(created, .committed(.done))
        let invite = engine.changeChannel(.invite(id, ["carol"]), by: "alice", for: Self.alice, now: 20)
        _ = engine.settle(invite, .failed)
        #expect(engine.directory.channels[id]?.members == ["alice", "bob"])
        #expect(engine.directory.channelIDs(of: "carol").isEmpty)
        let retry = engine.changeChannel(.invite(id, ["carol"]), by: "alice", for: Self.alice, now: 21)
        #expect(retry.persisted.count == 1)
        let done = engine.settle(retry, .committed(.done))
        #expect(done.contains(.addToChannel(["carol"], id)))
        #expect(engine.directory.channels[id]?.members == ["alice", "bob", "carol"])
    }

    @Test("changes to one channel go one at a time: an invite behind another is planned on what the first committed")
    func oneChangeAtATime() {
        var engine = makeEngine(users: ["alice", "bob", "carol", "dave"])
        let (created, id) = Self.group(&engine, members: ["bob"])
        _ = engine.settle(created, .committed(.done))
        let first = engine.changeChannel(.invite(id, ["carol"]), by: "alice", for: Self.alice, now: 30)
        let second = engine.changeChannel(.invite(id, ["dave"]), by: "bob", for: Self.bob, now: 31)
        #expect(second.isEmpty)
        let afterFirst = engine.settle(first, .committed(.done))
        guard case .updateChannel(let written)? = afterFirst.persisted.first?.write else {
            Issue.record("the waiting invite was not written after the first committed")
            return
        }
        #expect(written.members == ["alice", "bob", "carol", "dave"], "the second write would drop carol")
        _ = engine.settle(afterFirst, .committed(.done))
        #expect(engine.directory.channels[id]?.members == ["alice", "bob", "carol", "dave"])
        #expect(engine.writesInFlight == 0)
    }

    @Test("channel.update: only the creator changes pushFromBlockedUsers; a failed rename keeps the old name")
    func update() {
        var engine = makeEngine(users: ["alice", "bob"])
        let (created, id) = Self.group(&engine, members: ["bob"])
        _ = engine.settle(created, .committed(.done))
        let forbidden = engine.changeChannel(.update(id, name: nil, pushFromBlockedUsers: true), by: "bob", for: Self.bob, now: 40)
        #expect(forbidden.persisted.isEmpty && forbidden.replies.first?.reply.errorCode == .forbidden)
        let rename = engine.changeChannel(.update(id, name: "new", pushFromBlockedUsers: nil), by: "bob", for: Self.bob, now: 41)
        _ = engine.settle(rename, .failed)
        #expect(engine.directory.channels[id]?.name == "g")
        let retry = engine.changeChannel(.update(id, name: "new", pushFromBlockedUsers: nil), by: "bob", for: Self.bob, now: 42)
        _ = engine.settle(retry, .committed(.done))
        #expect(engine.directory.channels[id]?.name == "new")
    }

    @Test("an invitee who blocked the inviter is left out of the channel but shown to the inviter (§5), on commit")
    func blockedInviteeOnCommit() {
        var engine = makeEngine(users: ["alice", "bob"])
        let block = engine.setBlocks(["alice"], blocked: true, by: "bob", for: Self.bob, now: 1)
        _ = engine.settle(block, .committed(.done))
        let (created, id) = Self.group(&engine, members: ["bob"])
        let done = engine.settle(created, .committed(.done))
        #expect(engine.directory.channels[id]?.members == ["alice"])
        #expect(done.replies.first?.reply.members == ["alice", "bob"])
        #expect(done.contains(.addToChannel(["alice"], id)))
    }

    @Test("the admin API defines a channel with its own id on commit, refuses an id in use, and may change pushFromBlockedUsers")
    func adminChannels() {
        var engine = makeEngine(users: ["alice", "bob"])
        let define = ChannelCommand.define("c_fixed", type: .group, members: ["alice", "bob"], name: "team", distinct: false,
                                           pushFromBlockedUsers: false)
        let asked = engine.changeChannel(define, by: "", for: .admin(1), now: 1)
        #expect(engine.directory.channels["c_fixed"] == nil)
        let again = engine.changeChannel(define, by: "", for: .admin(2), now: 2)
        #expect(again.isEmpty, "a second define of the same id waits for the first")
        let failed = engine.settle(asked, .failed)
        #expect(failed.replies.map(\.to) == [.admin(1)], "the waiting define is written, not answered")
        #expect(failed.replies.first?.reply.errorCode == .internalError)
        guard failed.persisted.count == 1 else {
            Issue.record("the waiting define was not written after the first failed")
            return
        }
        _ = engine.settle(failed, .committed(.done))
        #expect(engine.directory.channels["c_fixed"]?.members == ["alice", "bob"])
        let taken = engine.changeChannel(define, by: "", for: .admin(3), now: 3)
        #expect(taken.replies.first?.reply.errorCode == .badRequest)
        let push = engine.changeChannel(.update("c_fixed", name: nil, pushFromBlockedUsers: true), by: "", for: .admin(4), now: 4)
        _ = engine.settle(push, .committed(.done))
        #expect(engine.directory.channels["c_fixed"]?.pushFromBlockedUsers == true)
    }
}
