/// Read state per channel member (PROTOCOL.md §14): the last `seq` each member read, and
/// enough about the messages after it to count the unread ones without reading them again.
///
/// Seqs are gapless per channel, so the messages after a member's mark number
/// `newestSeq - lastReadSeq`; of those, the member's own and those hidden from it (§5) never
/// count. Those are kept as ranges of seqs (a run of one sender's messages is one range), so
/// `unreadCount` is a subtraction. A member who never reads while others talk between its
/// messages grows one range per interruption: past `maxRanges` the oldest ranges fold into a
/// plain count, exact unless a later mark lands inside them (the count may then come out low
/// until the mark passes them).
public struct ReadStates: Sendable {
    public static let maxRanges = 256

    struct Member: Sendable {
        var lastReadSeq: Int64
        /// Seqs after `lastReadSeq` that do not count, ascending.
        var uncounted: [ClosedRange<Int64>] = []
        /// Uncounted seqs folded out of `uncounted`, all below its first range.
        var folded: Int64 = 0
        /// The highest seq `folded` covers.
        var foldedThrough: Int64 = 0

        mutating func uncount(_ seq: Int64) {
            guard seq > lastReadSeq else { return }
            if let last = uncounted.last, last.upperBound + 1 == seq {
                uncounted[uncounted.count - 1] = last.lowerBound...seq
            } else if uncounted.last.map({ seq > $0.upperBound }) ?? true {
                uncounted.append(seq...seq)
                if uncounted.count > ReadStates.maxRanges {
                    let oldest = uncounted.removeFirst()
                    folded += Int64(oldest.count)
                    foldedThrough = oldest.upperBound
                }
            }
        }

        /// `uncount` for a seq in any order (a message deleted or hidden after later ones
        /// arrived): inserted into its place among the ranges, unless already there.
        mutating func uncountAnywhere(_ seq: Int64) {
            guard seq > lastReadSeq, seq > foldedThrough else { return }
            if uncounted.last.map({ seq > $0.upperBound }) ?? true {
                uncount(seq)
                return
            }
            var low = 0
            var high = uncounted.count
            while low < high {
                let middle = (low + high) / 2
                if uncounted[middle].upperBound < seq { low = middle + 1 } else { high = middle }
            }
            // uncounted[low] is the first range ending at or after seq.
            if uncounted[low].contains(seq) { return }
            let joinsNext = uncounted[low].lowerBound == seq + 1
            let joinsPrevious = low > 0 && uncounted[low - 1].upperBound + 1 == seq
            switch (joinsPrevious, joinsNext) {
            case (true, true):
                uncounted[low - 1] = uncounted[low - 1].lowerBound...uncounted[low].upperBound
                uncounted.remove(at: low)
            case (true, false):
                uncounted[low - 1] = uncounted[low - 1].lowerBound...seq
            case (false, true):
                uncounted[low] = seq...uncounted[low].upperBound
            case (false, false):
                uncounted.insert(seq...seq, at: low)
                if uncounted.count > ReadStates.maxRanges {
                    let oldest = uncounted.removeFirst()
                    folded += Int64(oldest.count)
                    foldedThrough = oldest.upperBound
                }
            }
        }

        mutating func mark(_ seq: Int64) -> Bool {
            guard seq > lastReadSeq else { return false }
            lastReadSeq = seq
            let firstKept = uncounted.firstIndex { $0.upperBound > seq } ?? uncounted.endIndex
            uncounted.removeFirst(firstKept)
            if let first = uncounted.first, first.lowerBound <= seq { uncounted[0] = (seq + 1)...first.upperBound }
            if foldedThrough <= seq {
                folded = 0
                foldedThrough = 0
            }
            return true
        }
    }

    private var channels: [ChannelID: [UserID: Member]] = [:]

    public init() {}

    /// A member joined when the channel's newest message was `newestSeq`: what came before
    /// is not unread for it. A member that had a mark (it left and came back) keeps it.
    public mutating func joined(_ user: UserID, channel: ChannelID, newestSeq: Int64) {
        guard channels[channel]?[user] == nil else { return }
        channels[channel, default: [:]][user] = Member(lastReadSeq: newestSeq)
    }

    /// Drops every mark and count of `channel` (a cluster node stopped following it, or reads
    /// it again).
    public mutating func forget(channel: ChannelID) {
        channels[channel] = nil
    }

    /// A stored mark, at start-up.
    public mutating func load(_ user: UserID, channel: ChannelID, lastReadSeq: Int64) {
        channels[channel, default: [:]][user] = Member(lastReadSeq: lastReadSeq)
    }

    /// Message `seq` of `channel` does not count for `users` (its sender, those it is hidden
    /// from). Seqs arrive in ascending order per channel.
    public mutating func uncounted(_ seq: Int64, channel: ChannelID, for users: some Sequence<UserID>) {
        channels.modifyValue(forKey: channel) { members in
            for user in users { members.modifyValue(forKey: user) { $0.uncount(seq) } }
        }
    }

    /// Message `seq` of `channel`, in any order, no longer counts for `users` (nil: every
    /// member; a deleted message, §15).
    public mutating func uncountedAnywhere(_ seq: Int64, channel: ChannelID, for users: [UserID]? = nil) {
        channels.modifyValue(forKey: channel) { members in
            for user in users ?? Array(members.keys) { members.modifyValue(forKey: user) { $0.uncountAnywhere(seq) } }
        }
    }

    /// Moves `user`'s mark to `seq` if that is later; true when it moved.
    @discardableResult
    public mutating func markRead(_ user: UserID, channel: ChannelID, seq: Int64) -> Bool {
        guard channels[channel]?[user] != nil else {
            channels[channel, default: [:]][user] = Member(lastReadSeq: seq)
            return true
        }
        return channels.modifyValue(forKey: channel) { $0.modifyValue(forKey: user) { $0.mark(seq) } ?? false } ?? false
    }

    /// The last seq `user` read in `channel` (0: none, or not a member).
    public func lastReadSeq(of user: UserID, in channel: ChannelID) -> Int64 {
        channels[channel]?[user]?.lastReadSeq ?? 0
    }

    /// Messages after `user`'s mark that count for it, with the channel's newest at `newestSeq`.
    public func unreadCount(of user: UserID, in channel: ChannelID, newestSeq: Int64) -> Int64 {
        guard let member = channels[channel]?[user] else { return 0 }
        let after = newestSeq - member.lastReadSeq
        guard after > 0 else { return 0 }
        var uncounted = member.folded
        for range in member.uncounted { uncounted += Int64(range.count) }
        return max(0, after - uncounted)
    }
}
