/// Each sender's `message.send`s from arrival until they are rated and handed to the store,
/// so that they are rated, stored and answered in the order they arrived whatever each
/// waits for on the way: `clientMessageId` lookups finish in whatever order the store
/// answers them, and the shared rate (cluster mode) answers later still. A connection's
/// messages keep its order (PROTOCOL.md §2), and a burst past the rate loses its last
/// sends, not arbitrary ones.
///
/// Only senders with a send waiting are kept; a sender with none stores its next send
/// without queueing.
struct SendsInArrivalOrder: Sendable {
    enum Stage: Sendable {
        /// Its `clientMessageId` is being looked up.
        case lookingUp
        /// To be rated and stored when its turn comes.
        case ready
        /// The shared rate was asked and has not answered.
        case rating
        /// The shared rate answered (nil: it could not, this node decides).
        case rated(TokenBucketLimiter<UserNumber>.Decision?)
        /// Settled without a write (found by its `clientMessageId`, a failed lookup, or a
        /// channel the sender left while it waited): answered in turn.
        case answered(EngineReply)
    }

    struct Entry: Sendable {
        var ticket: WriteID
        var send: MessageSend
        var stage: Stage
    }

    private var queues: [UserID: [Entry]] = [:]
    /// The sender of each queued ticket.
    private var senders: [WriteID: UserID] = [:]

    func isEmpty(for sender: UserID) -> Bool { queues[sender] == nil }

    var count: Int { senders.count }

    mutating func append(_ ticket: WriteID, _ send: MessageSend, _ stage: Stage) {
        queues[send.sender, default: []].append(Entry(ticket: ticket, send: send, stage: stage))
        senders[ticket] = send.sender
    }

    /// Moves a queued send on; the sender whose queue may now drain, or nil for a ticket
    /// that is not queued (answered already).
    mutating func update(_ ticket: WriteID, to stage: Stage) -> UserID? {
        guard let sender = senders[ticket] else { return nil }
        let found = queues.modifyValue(forKey: sender) { queue -> Bool in
            guard let index = queue.firstIndex(where: { $0.ticket == ticket }) else { return false }
            queue[index].stage = stage
            return true
        }
        return found == true ? sender : nil
    }

    /// The queued entry of `ticket`.
    func entry(_ ticket: WriteID) -> Entry? {
        guard let sender = senders[ticket] else { return nil }
        return queues[sender]?.first { $0.ticket == ticket }
    }

    /// The sender's oldest queued send.
    func head(of sender: UserID) -> Entry? { queues[sender]?.first }

    mutating func removeHead(of sender: UserID) {
        guard let first = queues[sender]?.first else { return }
        senders[first.ticket] = nil
        if queues[sender]?.count == 1 {
            queues[sender] = nil
        } else {
            queues.modifyValue(forKey: sender) { _ = $0.removeFirst() }
        }
    }

    /// The sends of `sender` whose rate may be asked now: those ready, in order, up to the
    /// first one still being looked up (which may need a rate of its own before them).
    /// They are marked as asked.
    mutating func takeRatesToAsk(of sender: UserID) -> [Entry] {
        var asked: [Entry] = []
        queues.modifyValue(forKey: sender) { queue in
            for index in queue.indices {
                if case .lookingUp = queue[index].stage { break }
                if case .ready = queue[index].stage {
                    queue[index].stage = .rating
                    asked.append(queue[index])
                }
            }
        }
        return asked
    }
}
