/// The `seq`s one storm client saw of its channel, live or from history: a bit each,
/// so a second sight of one is a duplicate and a gap is a missed message.
struct StormSeqs: Sendable {
    private var bits: [UInt64] = []
    /// The last seq seen: where a reconnect's `afterSeq` catch-up starts.
    private(set) var highest: Int64 = 0
    private(set) var count = 0

    /// False when `seq` was seen before (or is not a seq).
    mutating func insert(_ seq: Int64) -> Bool {
        guard seq > 0 else { return false }
        let word = Int(seq >> 6)
        if word >= bits.count { bits.append(contentsOf: repeatElement(0, count: word + 1 - bits.count)) }
        let bit = UInt64(1) << UInt64(seq & 63)
        guard bits[word] & bit == 0 else { return false }
        bits[word] |= bit
        count += 1
        highest = max(highest, seq)
        return true
    }

    func contains(_ seq: Int64) -> Bool {
        let word = Int(seq >> 6)
        return seq > 0 && word < bits.count && bits[word] & (UInt64(1) << UInt64(seq & 63)) != 0
    }

    /// Seqs 1…`last` never seen.
    func missing(upTo last: Int64) -> Int {
        guard last > 0 else { return 0 }
        return Int(last) - (1...last).reduce(0) { $0 + (contains($1) ? 1 : 0) }
    }

    /// Seqs seen beyond `last` (the channel never stored them).
    func unexpected(after last: Int64) -> Int {
        count - (last > 0 ? (1...last).reduce(0) { $0 + (contains($1) ? 1 : 0) } : 0)
    }
}
