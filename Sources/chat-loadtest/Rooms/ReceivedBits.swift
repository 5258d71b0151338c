/// What one connection has received: one bit per (publisher, sequence), so a
/// second copy of a message is seen as a duplicate.
struct ReceivedBits {
    private var words: [[UInt64]]

    init(publishers: Int) {
        words = Array(repeating: [], count: publishers)
    }

    /// Marks (publisher, sequence); false when it was already marked.
    @inline(__always)
    mutating func insert(publisher: Int, sequence: Int) -> Bool {
        let word = sequence >> 6
        let bit = UInt64(1) << UInt64(sequence & 63)
        if word >= words[publisher].count { grow(publisher, toHold: word) }
        if words[publisher][word] & bit != 0 { return false }
        words[publisher][word] |= bit
        return true
    }

    private mutating func grow(_ publisher: Int, toHold word: Int) {
        let count = max(word + 1, words[publisher].count * 2, 16)
        words[publisher].append(contentsOf: repeatElement(0, count: count - words[publisher].count))
    }
}
