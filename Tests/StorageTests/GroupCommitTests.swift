import ChatCore
import Dispatch
import Storage
import Testing
@testable import SQLiteStorage

@Suite struct GroupCommitTests {
    @Test func concurrentEnqueuersGetGaplessSeqs() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        // The store refuses a message from a sender who is no member (§16).
        let senders = (0..<50).map { "u\($0)" }
        try store.write(.updateChannel(Fixture.group("c1", ["alice", "bob", "carol"] + senders)))
        try store.write(.createChannel(Fixture.group("c2", ["alice", "bob"] + senders)))
        let stored = Collector<Message>()
        let failures = Collector<StoreError>()
        let perSender = 40
        DispatchQueue.concurrentPerform(iterations: 50) { sender in
            for index in 0..<perSender {
                let channel = (sender + index) % 2 == 0 ? "c1" : "c2"
                store.enqueue(.insertMessage(Fixture.message("m-\(sender)-\(index)", in: channel, from: "u\(sender)"))) { result in
                    switch result {
                    case .success(.message(let message)): stored.append(message)
                    case .success: failures.append(StoreError("no new message"))
                    case .failure(let error): failures.append(error)
                    }
                }
            }
        }
        store.flush()
        #expect(failures.all.isEmpty)
        let all = stored.all
        #expect(all.count == 50 * perSender)
        for channel in ["c1", "c2"] {
            let seqs = all.filter { $0.channelID == channel }.map(\.seq).sorted()
            #expect(seqs == (0..<seqs.count).map { Int64($0) + 1 })
            #expect(store.seqs(channel, limit: 10_000) == seqs)
        }
        // Per sender, later enqueues got later seqs in the same channel (enqueue order).
        for sender in 0..<50 {
            for channel in ["c1", "c2"] {
                let mine = all.filter { $0.senderID == "u\(sender)" && $0.channelID == channel }
                    .sorted { $0.id.split(separator: "-").last.flatMap { Int($0) } ?? 0 < $1.id.split(separator: "-").last.flatMap { Int($0) } ?? 0 }
                #expect(mine.map(\.seq) == mine.map(\.seq).sorted())
            }
        }
    }

    @Test func completionsRunInEnqueueOrder() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        let order = Collector<Int>()
        let seqs = Collector<Int64>()
        for index in 0..<500 {
            let write: StoreWrite = index % 5 == 0
                ? .setBlock(blocker: "alice", blocked: "u\(index)", isBlocked: true, at: Int64(index))
                : .insertMessage(Fixture.message("m\(index)", in: "c1", from: "bob"))
            store.enqueue(write) { result in
                order.append(index)
                if case .success(.message(let message)) = result { seqs.append(message.seq) }
            }
        }
        store.flush()
        #expect(order.all == Array(0..<500))
        #expect(seqs.all == Array(1...400))
    }

    @Test func failedBatchFailsEveryCompletionAndLeavesNoGap() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory) { writes throws(StoreError) in
            for case .insertMessage(let message) in writes where message.text == "poison" {
                throw StoreError("injected commit failure")
            }
        }
        let before = try #require(store.store(Fixture.message("m0", in: "c1", from: "alice")))
        #expect(before.seq == 1)

        let gate = WriterGate()
        gate.close(store, with: .upsertUser(Fixture.user("dave")))
        let results = Collector<(Int, Result<StoreWriteResult, StoreError>)>()
        let batch: [StoreWrite] = [
            .insertMessage(Fixture.message("a", in: "c1", from: "alice")),
            .createChannel(Fixture.group("c9", ["alice", "bob"])),
            .insertMessage(Fixture.message("b", in: "c9", from: "bob")),
            .insertMessage(Fixture.message("p", in: "c1", from: "carol", text: "poison")),
            .setBlock(blocker: "alice", blocked: "bob", isBlocked: true, at: 5),
        ]
        for (index, write) in batch.enumerated() {
            store.enqueue(write) { results.append((index, $0)) }
        }
        gate.open()
        store.flush()
        #expect(results.all.map(\.0) == Array(0..<batch.count))
        for (_, result) in results.all {
            guard case .failure(let error) = result else { Issue.record("expected failure, got \(result)"); continue }
            #expect(error.description.contains("injected commit failure"))
        }
        // Nothing of the batch is visible, and the next message takes the next seq.
        let snapshot = try store.loadSnapshot()
        #expect(!snapshot.channels.map(\.id).contains("c9"))
        #expect(snapshot.blocks.isEmpty)
        #expect(store.seqs("c1", limit: 100) == [1])
        #expect(store.store(Fixture.message("after", in: "c1", from: "alice"))?.seq == 2)
        // The channel created by the failed batch can be created again, from seq 1.
        try store.write(.createChannel(Fixture.group("c9", ["alice", "bob"])))
        #expect(store.store(Fixture.message("b2", in: "c9", from: "bob"))?.seq == 1)
        #expect(store.seqs("c1", limit: 100) == [1, 2])
    }

    @Test func oneFailingWriteFailsAloneInItsBatch() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        let gate = WriterGate()
        gate.close(store, with: .upsertUser(Fixture.user("dave")))
        let results = Collector<Result<StoreWriteResult, StoreError>>()
        let batch: [StoreWrite] = [
            .insertMessage(Fixture.message("a", in: "c1", from: "alice")),
            .insertMessage(Fixture.message("x", in: "no-such-channel", from: "alice")),
            .insertMessage(Fixture.message("a", in: "c1", from: "bob")),   // duplicate message id
            .insertMessage(Fixture.message("b", in: "c1", from: "bob")),
        ]
        for write in batch { store.enqueue(write) { results.append($0) } }
        gate.open()
        store.flush()
        let all = results.all
        #expect(all.count == 4)
        if case .success(.message(let a)) = all[0] { #expect(a.seq == 1) } else { Issue.record("a: \(all[0])") }
        if case .failure = all[1] {} else { Issue.record("x should fail: \(all[1])") }
        if case .failure = all[2] {} else { Issue.record("duplicate id should fail: \(all[2])") }
        if case .success(.message(let b)) = all[3] { #expect(b.seq == 2) } else { Issue.record("b: \(all[3])") }
        #expect(store.seqs("c1", limit: 100) == [1, 2])
        #expect(store.store(Fixture.message("c", in: "c1", from: "bob"))?.seq == 3)
    }

    @Test func clientMessageIDIsIdempotent() throws {
        let directory = TemporaryDirectory()
        let store = try Fixture.seeded(directory)
        let first = try #require(store.store(Fixture.message("m1", in: "c1", from: "alice", clientMessageID: "k1")))
        let retry = store.commit(.insertMessage(Fixture.message("m1-retry", in: "c1", from: "alice", text: "other",
                                                                clientMessageID: "k1")))
        #expect(try retry.get() == .existingMessage(first), "a recognised retry writes nothing and says so")
        // Another sender may use the same client id.
        #expect(store.store(Fixture.message("m2", in: "c1", from: "bob", clientMessageID: "k1"))?.seq == 2)

        // Duplicates inside one batch resolve to the first.
        let gate = WriterGate()
        gate.close(store, with: .upsertUser(Fixture.user("dave")))
        let results = Collector<Message>()
        let existing = Collector<Bool>()
        for index in 0..<3 {
            store.enqueue(.insertMessage(Fixture.message("dup\(index)", in: "c1", from: "carol", clientMessageID: "k2"))) {
                switch $0 {
                case .success(.message(let message)): results.append(message); existing.append(false)
                case .success(.existingMessage(let message)): results.append(message); existing.append(true)
                default: break
                }
            }
        }
        gate.open()
        store.flush()
        #expect(results.all.map(\.id) == ["dup0", "dup0", "dup0"])
        #expect(results.all.map(\.seq) == [3, 3, 3])
        #expect(existing.all == [false, true, true])
        #expect(store.seqs("c1", limit: 100) == [1, 2, 3])
        #expect(try store.lookup(sender: "alice", clientMessageID: "k1").get() == first)
        #expect(try store.lookup(sender: "carol", clientMessageID: "k2").get()?.id == "dup0")
        #expect(try store.lookup(sender: "carol", clientMessageID: "k1").get() == nil)
    }

    @Test func flushWithNothingPendingReturns() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteStore(directory: directory.path)
        store.flush()
        store.flush()
    }
}
