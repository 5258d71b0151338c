import ChatCore
import Synchronization

/// Which channels a node reads when it starts to follow them (`Store.streams(of:)`), and
/// when: at most `maxInFlight` reads at once; channels asked for while those run wait and
/// go together in the next read, as writes do in a group commit. A connect storm then reads
/// in a few large reads instead of one per opening session, and the reads hold at most
/// `maxInFlight` of the store's connections, leaving the rest to the writes (a PostgreSQL
/// pool taken by thousands of one-channel reads made the profile writes of the same
/// connects wait past their connection deadline and fail).
///
/// Reading later than asked is always safe: a read only has to start after the channel's
/// subscription was confirmed, and what the bus carried meanwhile waits in the engine.
/// Decisions only: the caller runs each batch it is handed and reports its end.
final class StreamReadBatcher: Sendable {
    /// Reads running at once.
    static let maxInFlight = 2
    /// Channels in one read at most; more wait for the next.
    static let maxChannelsPerRead = 1_000

    private struct State {
        var waiting: [ChannelID] = []
        var waitingSet: Set<ChannelID> = []
        var inFlight = 0

        /// The next batch when a read may start now (counted in flight), else nil.
        mutating func takeBatch() -> [ChannelID]? {
            guard inFlight < StreamReadBatcher.maxInFlight, !waiting.isEmpty else { return nil }
            let batch = Array(waiting.prefix(StreamReadBatcher.maxChannelsPerRead))
            waiting.removeFirst(batch.count)
            waitingSet.subtract(batch)
            inFlight += 1
            return batch
        }
    }

    private let state = Mutex(State())

    /// `channels` are to be read: the batch to read now (the caller starts it), or nil when
    /// they wait for a running read to end.
    func add(_ channels: [ChannelID]) -> [ChannelID]? {
        state.withLock { state in
            for channel in channels where state.waitingSet.insert(channel).inserted {
                state.waiting.append(channel)
            }
            return state.takeBatch()
        }
    }

    /// A read ended: the batch to read next, or nil.
    func finished() -> [ChannelID]? {
        state.withLock { state in
            state.inFlight -= 1
            return state.takeBatch()
        }
    }
}
