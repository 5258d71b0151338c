import ChatCore
import Synchronization

/// A write waiting for its group commit, with what to call once it committed or failed.
public struct PendingWrite: Sendable {
    /// nil: a `flush()` barrier.
    public var write: StoreWrite?
    public var completion: @Sendable (Result<StoreWriteResult, StoreError>) -> Void

    public init(write: StoreWrite?, completion: @escaping @Sendable (Result<StoreWriteResult, StoreError>) -> Void) {
        self.write = write
        self.completion = completion
    }
}

/// The waiting side of a group commit, the same for every backend's writer: `enqueue`
/// appends and says whether a drain must start; the one drain running takes *all* pending
/// writes at once, and ends when it finds none.
public final class GroupCommitInbox: Sendable {
    private struct State: ~Copyable {
        var pending: [PendingWrite] = []
        var draining = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Appends `item`; true when no drain is running and the caller must start one.
    public func append(_ item: PendingWrite) -> Bool {
        state.withLock { state in
            state.pending.append(item)
            if state.draining { return false }
            state.draining = true
            return true
        }
    }

    /// Swaps every pending write into `batch` (emptied first, its storage kept); false when
    /// there was none, and the drain is over.
    public func takeAll(into batch: inout [PendingWrite]) -> Bool {
        batch.removeAll(keepingCapacity: true)
        return state.withLock { state in
            swap(&state.pending, &batch)
            if batch.isEmpty { state.draining = false }
            return !batch.isEmpty
        }
    }

    /// Swaps every pending write into `batch` like `takeAll`, but the drain goes on when
    /// there was none (a writer with a commit still in flight ends its drain later).
    public func takePending(into batch: inout [PendingWrite]) -> Bool {
        batch.removeAll(keepingCapacity: true)
        return state.withLock { state in
            swap(&state.pending, &batch)
            return !batch.isEmpty
        }
    }
}
