/// Each channel's recent messages by sender: the seqs of each sender's messages and the
/// newest of them. In strict mode (PROTOCOL.md §5) what a member sees of a channel depends
/// on the block relations as they stand now, not as they stood when a message was sent:
/// after A blocks B, none of A's messages are in B's history, so none may count as unread
/// for B or be B's `lastMessage`, and after an unblock they are back. With this index a
/// view subtracts the messages of the few users blocked with the viewer instead of reading
/// the store again.
///
/// Only messages stored for everyone are indexed (a 1-to-1 message stored hidden from its
/// recipient is hidden for good and never counts for it: `ReadStates` leaves it out on its
/// own). Per sender the seqs within `window` of the channel's newest are kept, so a count
/// reaches back that far; the newest message of each sender is kept however old.
public struct MessagesBySender: Sendable {
    /// How far behind the newest seq a sender's seqs are kept (trimmed once they reach
    /// twice as far, so an append rarely moves the array).
    public static let window: Int64 = 10_000

    struct Senders: Sendable {
        var seqs: [UserID: [Int64]] = [:]
        /// Each sender's newest message stored for everyone.
        var newestShown: [UserID: Message] = [:]
        /// Each sender's newest message, including one stored hidden from its recipient
        /// (the sender still sees its own).
        var newest: [UserID: Message] = [:]
    }

    private var channels: [ChannelID: Senders] = [:]

    public init() {}

    /// Drops what is known of `channel` (a cluster node stopped following it, or reads it again).
    public mutating func forget(channel: ChannelID) {
        channels[channel] = nil
    }

    /// A committed message, in seq order per channel.
    public mutating func record(_ message: Message) {
        // Changed where it lives: a copy taken out and put back would copy every sender's seqs.
        if channels[message.channelID] == nil { channels[message.channelID] = Senders() }
        channels.modifyValue(forKey: message.channelID) { senders in
            senders.newest[message.senderID] = message
            if message.hiddenFrom == nil {
                senders.newestShown[message.senderID] = message
                Self.append(message.seq, to: &senders.seqs[message.senderID, default: []])
            }
        }
    }

    /// A stored message's header at start-up (in seq order per channel): counted, not shown.
    public mutating func record(_ header: MessageHeader) {
        guard header.hiddenFrom == nil else { return }
        Self.append(header.seq, to: &channels[header.channelID, default: Senders()].seqs[header.senderID, default: []])
    }

    /// A stored message at start-up that may be its sender's newest.
    public mutating func recordNewest(_ message: Message) {
        var senders = channels[message.channelID] ?? Senders()
        if (senders.newest[message.senderID]?.seq ?? 0) < message.seq { senders.newest[message.senderID] = message }
        if message.hiddenFrom == nil, (senders.newestShown[message.senderID]?.seq ?? 0) < message.seq {
            senders.newestShown[message.senderID] = message
        }
        channels[message.channelID] = senders
    }

    /// A deleted message (§15) no longer counts: its seq leaves its sender's list.
    public mutating func forget(_ seq: Int64, of sender: UserID, in channel: ChannelID) {
        channels.modifyValue(forKey: channel) { senders in
            senders.seqs.modifyValue(forKey: sender) { seqs in
                if let index = seqs.firstIndex(of: seq) { seqs.remove(at: index) }
            }
        }
    }

    private static func append(_ seq: Int64, to seqs: inout [Int64]) {
        guard seqs.last.map({ $0 < seq }) ?? true else { return }
        seqs.append(seq)
        if let first = seqs.first, seq - first > 2 * Self.window {
            let keepFrom = seqs.firstIndex { seq - $0 <= Self.window } ?? seqs.endIndex
            seqs.removeFirst(keepFrom)
        }
    }

    /// How many of `sender`'s messages stored for everyone in `channel` come after `seq`.
    public func count(of sender: UserID, in channel: ChannelID, after seq: Int64) -> Int64 {
        guard let seqs = channels[channel]?.seqs[sender], let last = seqs.last, last > seq else { return 0 }
        var low = 0
        var high = seqs.count
        while low < high {
            let middle = (low + high) / 2
            if seqs[middle] <= seq { low = middle + 1 } else { high = middle }
        }
        return Int64(seqs.count - low)
    }

    /// The newest message of `channel` that `viewer` may see, where `hides(sender)` says
    /// whose messages it does not see now: its own newest, or another sender's newest
    /// stored for everyone.
    public func newestVisible(in channel: ChannelID, to viewer: UserID, hides: (UserID) -> Bool) -> Message? {
        guard let senders = channels[channel] else { return nil }
        var best = senders.newest[viewer]
        for (sender, message) in senders.newestShown where sender != viewer && !hides(sender) {
            if (best?.seq ?? 0) < message.seq { best = message }
        }
        return best
    }
}
