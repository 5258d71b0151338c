/// What one chaos client has seen of its channels' messages, and when it must catch up
/// with `message.history` `afterSeq` the way a chat app does (PROTOCOL.md §4, §7, §13):
/// after every (re)connect, on `session.resync`, and when a `message.new` skips a seq.
/// No I/O: it takes what arrived and answers which catch-up reads to send.
struct ChaosDeliveries {
    /// Per channel index: every seq seen (live, in a reply, or read back).
    private(set) var seen: [Set<Int64>]
    /// Per channel index: the highest k with 1…k all seen.
    private(set) var contiguous: [Int64]
    /// Per channel index: a catch-up read is on its way.
    private var catchingUp: [Bool]
    /// Per channel index: asked again once the read on its way is answered.
    private var catchUpAgain: [Bool]
    private(set) var resyncs = 0
    private(set) var catchUpReads = 0
    /// Live `message.new` that skipped a seq (caught up from history).
    private(set) var gapsSeenLive = 0

    init(channels: Int) {
        seen = Array(repeating: [], count: channels)
        contiguous = Array(repeating: 0, count: channels)
        catchingUp = Array(repeating: false, count: channels)
        catchUpAgain = Array(repeating: false, count: channels)
    }

    /// A seq seen live or in a send's reply; returns a channel to catch up when it skipped one.
    mutating func saw(_ seq: Int64, in channel: Int, live: Bool) -> Int? {
        let skipped = seq > contiguous[channel] + 1 && !seen[channel].contains(seq)
        insert(seq, in: channel)
        guard skipped, live else { return nil }
        gapsSeenLive += 1
        return catchUp(channel)
    }

    /// `session.resync` for these channels (indices of this client's channels).
    mutating func resync(_ channels: [Int]) -> [Int] {
        resyncs += 1
        return channels.compactMap { catchUp($0) }
    }

    /// After a connection opened: every channel.
    mutating func reconnected() -> [Int] {
        seen.indices.compactMap { catchUp($0) }
    }

    /// The `afterSeq` of the next read for `channel`.
    func afterSeq(_ channel: Int) -> Int64 { contiguous[channel] }

    /// A catch-up page arrived: whether to read on from the page's last seq (a full page),
    /// or a channel to read again (something arrived meanwhile that left a gap), or neither.
    mutating func caughtUp(_ channel: Int, seqs: [Int64], fullPage: Bool) -> (next: Int64?, again: Int?) {
        for seq in seqs { insert(seq, in: channel) }
        if fullPage, let last = seqs.last {
            catchUpReads += 1
            return (last, nil)
        }
        catchingUp[channel] = false
        if catchUpAgain[channel] {
            catchUpAgain[channel] = false
            return (nil, catchUp(channel))
        }
        return (nil, nil)
    }

    /// The connection closed: reads on their way are gone.
    mutating func connectionLost() {
        for channel in catchingUp.indices {
            catchingUp[channel] = false
            catchUpAgain[channel] = false
        }
    }

    /// Seqs of 1…`last` this client has not seen.
    func missing(_ channel: Int, upTo last: Int64) -> Int {
        guard last > contiguous[channel] else { return 0 }
        return (contiguous[channel] + 1...last).reduce(0) { $0 + (seen[channel].contains($1) ? 0 : 1) }
    }

    /// Asks for a catch-up read of `channel`: the channel, or nil when one is on its way
    /// (it is read again once that one is answered).
    mutating func catchUp(_ channel: Int) -> Int? {
        if catchingUp[channel] {
            catchUpAgain[channel] = true
            return nil
        }
        catchingUp[channel] = true
        catchUpReads += 1
        return channel
    }

    private mutating func insert(_ seq: Int64, in channel: Int) {
        seen[channel].insert(seq)
        while seen[channel].contains(contiguous[channel] + 1) { contiguous[channel] += 1 }
    }
}
