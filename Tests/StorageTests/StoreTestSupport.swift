import ChatCore
import Dispatch
import Foundation
import Storage
import Synchronization
@testable import SQLiteStorage

/// A fresh directory under the system temp dir, removed by `remove()`.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init() {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("storage-tests-\(UUID().uuidString)")
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Collects values from completions that run on other threads.
final class Collector<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

extension Store {
    /// Enqueues `write` and blocks until its completion ran.
    @discardableResult
    func commit(_ write: StoreWrite) -> Result<StoreWriteResult, StoreError> {
        let result = Mutex<Result<StoreWriteResult, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        enqueue(write) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 } ?? .failure(StoreError("no result"))
    }

    /// Commits `write`, throwing its error.
    func write(_ write: StoreWrite) throws(StoreError) {
        _ = try commit(write).get()
    }

    /// Stores `message` and returns it with its seq, or nil on failure.
    func store(_ message: Message) -> Message? {
        if case .success(.message(let stored)) = commit(.insertMessage(message)) { return stored }
        return nil
    }

    func history(_ channelID: ChannelID, viewer: UserID = "nobody", before: Int64? = nil, after: Int64? = nil,
                 limit: Int) -> Result<[Message], StoreError> {
        let result = Mutex<Result<[Message], StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        history(channelID: channelID, viewer: viewer, beforeSeq: before, afterSeq: after, limit: limit, thread: nil) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 } ?? .failure(StoreError("no result"))
    }

    func seqs(_ channelID: ChannelID, viewer: UserID = "nobody", before: Int64? = nil, after: Int64? = nil,
              limit: Int) -> [Int64]? {
        try? history(channelID, viewer: viewer, before: before, after: after, limit: limit).get().map(\.seq)
    }

    func lookup(sender: UserID, clientMessageID: String) -> Result<Message?, StoreError> {
        let result = Mutex<Result<Message?, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        message(sender: sender, clientMessageID: clientMessageID) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 } ?? .failure(StoreError("no result"))
    }
}

enum Fixture {
    static func user(_ id: UserID) -> User { User(id: id, name: id.capitalized, createdAt: 1_000) }

    static func group(_ id: ChannelID, _ members: [UserID], oneToOne: Bool = false) -> Channel {
        Channel(id: id, type: .group, name: "ch \(id)", members: members, isOneToOne: oneToOne,
                createdAt: 2_000, createdBy: members.first ?? "")
    }

    static func message(_ id: MessageID, in channelID: ChannelID, from sender: UserID, text: String? = nil,
                        clientMessageID: String? = nil, hiddenFrom: UserID? = nil, at createdAt: Milliseconds = 3_000) -> Message {
        Message(id: id, channelID: channelID, senderID: sender, text: text ?? "text of \(id)",
                clientMessageID: clientMessageID, createdAt: createdAt, hiddenFrom: hiddenFrom)
    }

    /// A store with users alice, bob, carol and the group channel `c1` of all three.
    static func seeded(_ directory: borrowing TemporaryDirectory,
                       beforeCommit: GroupCommitWriter.CommitHook? = nil) throws -> SQLiteStore {
        let store = try SQLiteStore(directory: directory.path, synchronous: .full, readerCount: 2, beforeCommit: beforeCommit)
        for id in ["alice", "bob", "carol"] { try store.write(.upsertUser(user(id))) }
        try store.write(.createChannel(group("c1", ["alice", "bob", "carol"])))
        return store
    }
}

/// Holds the writer: the completion of a write enqueued by `close()` blocks the
/// writer queue until `open()`, so everything enqueued meanwhile forms one batch.
final class WriterGate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)

    /// Enqueues `write` and returns once the writer is blocked in its completion.
    func close(_ store: some Store, with write: StoreWrite) {
        store.enqueue(write) { [self] _ in
            entered.signal()
            release.wait()
        }
        entered.wait()
    }

    func open() { release.signal() }
}
