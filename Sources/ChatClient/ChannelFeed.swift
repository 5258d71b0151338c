/// One followed channel's messages for the app: every message it can see, exactly once, in
/// `seq` order, across reconnects. Sans-IO: the client feeds it live messages, sent messages
/// and history pages, and it says what to deliver and when to read history.
///
/// Seqs are gapless in the store but not in what a user sees (a 1-to-1 message hidden by a
/// block never arrives), so a gap is settled by reading history after the last delivered
/// seq: what history does not return up to the message that showed the gap is hidden.
struct ChannelFeed: Sendable {
    enum Action: Equatable, Sendable {
        /// Read `message.history` after this seq (and feed the page back).
        case readHistory(afterSeq: Int64)
    }

    private(set) var lastSeq: Int64
    /// Live messages that arrived ahead of a gap or during a history read, by seq.
    private var held: [Int64: Message] = [:]
    private(set) var reading = false

    init(afterSeq: Int64) {
        lastSeq = afterSeq
    }

    /// A message from `message.new` or a send's answer.
    mutating func received(_ message: Message, deliver: inout [Message]) -> Action? {
        guard message.seq > lastSeq else { return nil }
        if reading || message.seq != lastSeq + 1 {
            held[message.seq] = message
            return startReading()
        }
        append(message, to: &deliver)
        drainHeld(contiguousOnly: true, into: &deliver)
        return nil
    }

    /// The connection came back, or the gateway said it may have missed events: read what came
    /// after the last delivered message.
    mutating func catchUp() -> Action? {
        startReading()
    }

    /// A history page read after `lastSeq` (ascending), and whether more may follow.
    mutating func historyRead(_ page: [Message], more: Bool, deliver: inout [Message]) -> Action? {
        for message in page where message.seq > lastSeq {
            held[message.seq] = nil
            append(message, to: &deliver)
        }
        if more && !page.isEmpty { return .readHistory(afterSeq: lastSeq) }
        reading = false
        // Everything visible up to the newest held message has been read: what history did not
        // return below it is hidden from this user.
        drainHeld(contiguousOnly: false, into: &deliver)
        return nil
    }

    /// A history read failed (the connection went): the next `catchUp` starts it again.
    mutating func historyFailed() {
        reading = false
    }

    private mutating func startReading() -> Action? {
        guard !reading else { return nil }
        reading = true
        return .readHistory(afterSeq: lastSeq)
    }

    private mutating func append(_ message: Message, to deliver: inout [Message]) {
        deliver.append(message)
        lastSeq = message.seq
    }

    private mutating func drainHeld(contiguousOnly: Bool, into deliver: inout [Message]) {
        while !held.isEmpty {
            if let next = held.removeValue(forKey: lastSeq + 1) {
                append(next, to: &deliver)
            } else if !contiguousOnly, let lowest = held.keys.min() {
                if lowest <= lastSeq {
                    held[lowest] = nil
                } else if let message = held.removeValue(forKey: lowest) {
                    append(message, to: &deliver)
                }
            } else {
                return
            }
        }
    }
}
