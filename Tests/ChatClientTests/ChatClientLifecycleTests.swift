import Foundation
import Testing
@testable import ChatClient

/// The message lifecycle (PROTOCOL.md §15) through the SDK against a live gateway: every new
/// call answers as the protocol says and the other member hears each change as its typed
/// event; a followed channel's feed gets what it missed while cut off, each change once; a
/// block keeps a blocked user's reaction out of the blocker's counts; changes have their own rate.
@Suite("ChatClient message lifecycle", .serialized)
struct ChatClientLifecycleTests {
    /// The code a call failed with (nil: it did not fail).
    private static func code(_ call: () async throws -> some Any) async -> ChatClientError.Code? {
        do {
            _ = try await call()
            return nil
        } catch let error as ChatClientError {
            return error.code
        } catch {
            return .other("\(error)")
        }
    }

    @Test func eachCallAnswersAsTheProtocolSaysAndTheOtherMemberHearsEachChange() async throws {
        let gateway = try await LiveGateway.start()
        let alice = gateway.client("alice")
        let bob = gateway.client("bob")
        try await alice.connect()
        try await bob.connect()
        let channel = try await alice.createChannel(userIDs: ["bob"], name: "lifecycle")
        let aliceHears = StreamReader(await alice.events(in: channel.id))
        let bobHears = StreamReader(await bob.events(in: channel.id))

        // A mention of a member and of a non-member: the non-member is dropped.
        let first = try await alice.send("hello @bob", to: channel.id, mentionedUserIDs: ["bob", "nobody"])
        #expect(first.mentionedUserIds == ["bob"])
        #expect(first.parentSeq == nil && first.replyCount == 0 && first.version > 0 && !first.isEdited)
        let mentions = Array(repeating: "bob", count: 26).enumerated().map { "u\($0.offset)" }
        #expect(await Self.code { try await alice.send("many", to: channel.id, mentionedUserIDs: mentions) } == .tooManyIDs)

        // A reaction: bob's answer counts it as his own; alice hears it with the counts.
        let reacted = try await bob.addReaction("👍", to: first.seq, in: channel.id)
        #expect(reacted.reactions == ["👍": 1] && reacted.ownReactions == ["👍"] && reacted.version > first.version)
        let heard = await aliceHears.first { if case .reaction(let update) = $0 { update } else { nil } }
        #expect(heard == ReactionUpdate(channelId: channel.id, seq: first.seq, userId: "bob", kind: "👍", reactions: ["👍": 1], added: true))
        #expect(try await bob.addReaction("👍", to: first.seq, in: channel.id).reactions == ["👍": 1], "again: a no-op")
        #expect(await Self.code { try await bob.addReaction("", to: first.seq, in: channel.id) } == .badRequest)
        #expect(await Self.code { try await bob.addReaction("a\u{1}", to: first.seq, in: channel.id) } == .badRequest)
        #expect(await Self.code { try await bob.addReaction(String(repeating: "x", count: 65), to: first.seq, in: channel.id) } == .badRequest)
        let removed = try await bob.removeReaction("👍", from: first.seq, in: channel.id)
        #expect(removed.reactions.isEmpty && removed.ownReactions.isEmpty)
        let heardRemoval = await aliceHears.first { if case .reaction(let update) = $0, !update.added { update } else { nil } }
        #expect(heardRemoval?.userId == "bob" && heardRemoval?.reactions["👍", default: 0] == 0)

        // An edit: same seq and createdAt, editedAt set; bob hears it; only the author may edit.
        let edited = try await alice.updateMessage(first.seq, in: channel.id, text: "hello, bob", mentionedUserIDs: [])
        #expect(edited.seq == first.seq && edited.createdAt == first.createdAt && edited.text == "hello, bob")
        #expect(edited.editedAt != nil && edited.mentionedUserIds.isEmpty && edited.version > removed.version)
        let bobHeardEdit = await bobHears.first { if case .messageUpdated(let message, .edit) = $0 { message } else { nil } }
        #expect(bobHeardEdit?.text == "hello, bob" && bobHeardEdit?.version == edited.version)
        #expect(await Self.code { try await bob.updateMessage(first.seq, in: channel.id, text: "mine now") } == .forbidden)
        #expect(await Self.code { try await alice.updateMessage(9999, in: channel.id, text: "?") } == .messageNotFound)

        // A reply: message.new with parentSeq; the parent's reply count as message.updated "reply", same version.
        let reply = try await bob.send("a reply", to: channel.id, parentSeq: first.seq)
        #expect(reply.parentSeq == first.seq)
        let parent = await aliceHears.first { if case .messageUpdated(let message, .reply) = $0 { message } else { nil } }
        #expect(parent?.seq == first.seq && parent?.replyCount == 1 && parent?.version == reply.version)
        #expect(await Self.code { try await alice.send("deeper", to: channel.id, parentSeq: reply.seq) } == .badRequest)
        #expect(await Self.code { try await alice.send("nowhere", to: channel.id, parentSeq: 9999) } == .badRequest)
        #expect(try await alice.thread(first.seq, in: channel.id).items.map(\.seq) == [reply.seq])
        let everything = try await alice.history(channel.id, afterSeq: 0).items
        #expect(everything.map(\.seq) == [first.seq, reply.seq] && everything.last?.parentSeq == first.seq)

        // A delete: a tombstone, heard by bob; deleting again answers it again; no edit or reaction on it.
        _ = try await bob.addReaction("🎉", to: first.seq, in: channel.id)
        let tombstone = try await alice.deleteMessage(first.seq, in: channel.id)
        #expect(tombstone.isDeleted && tombstone.text.isEmpty && tombstone.data == nil)
        #expect(tombstone.reactions.isEmpty && tombstone.mentionedUserIds.isEmpty && tombstone.replyCount == 1)
        let bobHeardDelete = await bobHears.first { if case .messageUpdated(let message, .delete) = $0 { message } else { nil } }
        #expect(bobHeardDelete?.isDeleted == true)
        #expect(try await alice.deleteMessage(first.seq, in: channel.id) == tombstone)
        #expect(await Self.code { try await alice.updateMessage(first.seq, in: channel.id, text: "back") } == .messageDeleted)
        #expect(await Self.code { try await bob.addReaction("👍", to: first.seq, in: channel.id) } == .messageDeleted)
        #expect(try await alice.thread(first.seq, in: channel.id).items.first?.parentSeq == first.seq, "replies keep their parentSeq")

        // The change log: each message once, in its latest state, paged; caught up to the channel's version.
        let now = try await bob.channel(channel.id).version
        let changes = try await bob.changes(in: channel.id, afterVersion: 0, pageSize: 1)
        #expect(changes.version == now && now >= tombstone.version)
        #expect(Set(changes.messages.map(\.seq)) == [first.seq, reply.seq] && changes.messages.count == 2)
        #expect(changes.messages.first { $0.seq == first.seq }?.isDeleted == true)
        #expect(changes.messages.map(\.version) == changes.messages.map(\.version).sorted())
        let none = try await bob.changesPage(in: channel.id, afterVersion: now)
        #expect(none.messages.isEmpty && none.next == nil && none.version == now)
        await alice.disconnect()
        await bob.disconnect()
    }

    @Test func aFeedCutOffGetsTheEditsDeletesReactionsAndMessagesItMissedEachOnce() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport()
        let bob = gateway.client("bob", transport: transport)
        let alice = gateway.client("alice")
        try await alice.connect()
        try await bob.connect()
        let channel = try await alice.createChannel(userIDs: ["bob"], name: "away")
        let one = try await alice.send("one", to: channel.id)
        let two = try await alice.send("two", to: channel.id)
        let stream = StreamReader(try await bob.messages(in: channel.id, afterSeq: 0))
        #expect(await stream.take(2).map(\.message?.text) == ["one", "two"])
        _ = try await alice.updateMessage(one.seq, in: channel.id, text: "one, live")
        let live = await stream.take(1)
        #expect(live.count == 1 && live.first.map { if case .updated(let m) = $0 { m.text == "one, live" } else { false } } == true)

        // bob's connection stops delivering; meanwhile alice edits, deletes, reacts, sends and replies.
        transport.stall()
        _ = try await alice.updateMessage(one.seq, in: channel.id, text: "one, fixed")
        _ = try await alice.deleteMessage(two.seq, in: channel.id)
        _ = try await alice.addReaction("🎉", to: one.seq, in: channel.id)
        let three = try await alice.send("three", to: channel.id)
        let four = try await alice.send("four, in one's thread", to: channel.id, parentSeq: one.seq)
        transport.kill()

        let caught = await stream.take(4, seconds: 20)
        let summary = caught.map { item -> String in
            switch item {
            case .new(let m): "new \(m.seq)"
            case .updated(let m): "updated \(m.seq)"
            case .reactions(let r): "reactions \(r.seq)"
            }
        }
        #expect(summary == ["updated \(two.seq)", "updated \(one.seq)", "new \(three.seq)", "new \(four.seq)"], "\(caught)")
        let latestOne = caught.compactMap(\.message).first { $0.seq == one.seq }
        #expect(latestOne?.text == "one, fixed" && latestOne?.reactions == ["🎉": 1] && latestOne?.replyCount == 1)
        #expect(latestOne?.ownReactions.isEmpty == true, "alice's reaction, not bob's")
        #expect(caught.compactMap(\.message).first { $0.seq == two.seq }?.isDeleted == true)
        #expect(caught.compactMap(\.message).last?.parentSeq == one.seq)
        #expect(transport.connectCount >= 2)
        // Exactly once: nothing more comes.
        #expect(await stream.take(1, seconds: 1).isEmpty)
        // And live again after the catch-up.
        _ = try await alice.updateMessage(three.seq, in: channel.id, text: "three, edited")
        let after = await stream.take(1)
        #expect(after.first?.message?.text == "three, edited")
        await alice.disconnect()
        await bob.disconnect()
    }

    @Test func aBlockedUsersReactionIsMissingFromTheBlockersCountsInAOneToOne() async throws {
        let gateway = try await LiveGateway.start()
        let alice = gateway.client("alice")
        let bob = gateway.client("bob")
        try await alice.connect()
        try await bob.connect()
        let channel = try await alice.createChannel(userIDs: ["bob"], name: "one to one")
        #expect(channel.isOneToOne)
        let message = try await alice.send("hi", to: channel.id)
        #expect(try await alice.block(["bob"])["bob"] == .success)
        let aliceHears = StreamReader(await alice.events(in: channel.id))
        let bobsView = try await bob.addReaction("👍", to: message.seq, in: channel.id)
        #expect(bobsView.reactions == ["👍": 1] && bobsView.ownReactions == ["👍"], "bob is not told: his view counts it")
        let heard = await aliceHears.first(seconds: 1.5) { if case .reaction(let update) = $0 { update } else { nil } }
        #expect(heard == nil, "no reaction.added from bob reaches alice")
        #expect(try await alice.history(channel.id, afterSeq: 0).items.first?.reactions == [:])
        #expect(try await alice.changes(in: channel.id, afterVersion: 0).messages.first?.reactions == [:])
        // Unblocking makes bob's reaction count again (unlike his 1-to-1 messages during the block).
        _ = try await alice.unblock(["bob"])
        #expect(try await alice.history(channel.id, afterSeq: 0).items.first?.reactions == ["👍": 1])
        await alice.disconnect()
        await bob.disconnect()
    }

    @Test func editsDeletesAndReactionsHaveTheirOwnRateThatTheClientCanWaitOut() async throws {
        let gateway = try await LiveGateway.start(userChangesPerSecond: 2, userChangeBurst: 1)
        // The test gateway's clock moves only when told: about as fast as the real one here.
        let ticking = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(50))
                gateway.clock.advance(by: 50)
            }
        }
        defer { ticking.cancel() }
        let alice = gateway.client("alice")
        try await alice.connect()
        let channel = try await alice.createChannel(userIDs: [], name: "rates")
        let message = try await alice.send("react to me", to: channel.id)
        _ = try await alice.addReaction("a", to: message.seq, in: channel.id)
        do {
            _ = try await alice.addReaction("b", to: message.seq, in: channel.id)
            Issue.record("a second change at once was not refused")
        } catch let error as ChatClientError {
            #expect(error.code == .rateLimited && (error.retryAfterMs ?? 0) > 0 && (error.retryAfterMs ?? 0) <= 1000)
        }
        _ = try await alice.send("messages have their own rate", to: channel.id)
        let patient = gateway.client("alice") { $0.retryRateLimited = true }
        try await patient.connect()
        let started = ContinuousClock.now
        for kind in ["c", "d", "e"] { _ = try await patient.addReaction(kind, to: message.seq, in: channel.id) }
        #expect(ContinuousClock.now - started >= .milliseconds(700), "three changes at 2/s, burst 1, take about a second")
        #expect(try await patient.history(channel.id, afterSeq: 0).items.first?.ownReactions.sorted() == ["a", "c", "d", "e"])
        await alice.disconnect()
        await patient.disconnect()
    }
}

/// Reads a stream in one task for the whole test (a consumer cancelled while waiting would
/// end an `AsyncStream` for good), and hands what came to the test as it asks.
final class StreamReader<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [Element] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<Element>) {
        task = Task { for await element in stream { self.lock.withLock { self.buffer.append(element) } } }
    }

    deinit { task?.cancel() }

    /// The next `count` elements, or fewer when `seconds` pass first.
    func take(_ count: Int, seconds: Double = 15) async -> [Element] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline, lock.withLock({ buffer.count }) < count {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return lock.withLock {
            let taken = Array(buffer.prefix(count))
            buffer.removeFirst(taken.count)
            return taken
        }
    }

    /// The first element that `match` picks within `seconds` (the ones before it are passed
    /// over), or nil.
    func first<T>(seconds: Double = 10, _ match: (Element) -> T?) async -> T? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            let found: T? = lock.withLock {
                for (index, element) in buffer.enumerated() {
                    if let picked = match(element) {
                        buffer.removeFirst(index + 1)
                        return picked
                    }
                }
                return nil
            }
            if let found { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
