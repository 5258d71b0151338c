/// A publishing member's side of the run: the next sequence number, what is
/// in flight, and which sequences the gateway acknowledged. Touched only on its loop.
final class PublisherState {
    let index: Int
    var encoder: MessageEncoder
    private(set) var nextSequence = 0
    private(set) var inFlight = 0
    /// Actual send times by sequence, for the ack latency.
    private var sendTimes: [UInt64] = []
    /// The open-loop phase offset in [0, 1), spreading publishers over each interval.
    let phase: Double
    /// One bit per acknowledged sequence.
    private(set) var acked: [UInt64] = []

    init(index: Int, publishers: Int, channelID: String, textSize: Int) {
        self.index = index
        encoder = MessageEncoder(publisher: index, channelID: channelID, textSize: textSize)
        phase = Double(index) / Double(max(1, publishers))
    }

    /// Takes the next sequence number for a send at `time`.
    func beginSend(at time: UInt64) -> Int {
        let sequence = nextSequence
        nextSequence += 1
        inFlight += 1
        sendTimes.append(time)
        return sequence
    }

    /// The reply for `sequence` arrived; returns its send time, or nil for an unknown id.
    func finishSend(_ sequence: Int, ok: Bool) -> UInt64? {
        guard sequence >= 0, sequence < sendTimes.count else { return nil }
        inFlight -= 1
        if ok {
            let word = sequence >> 6
            if word >= acked.count { acked.append(contentsOf: repeatElement(0, count: word + 1 - acked.count)) }
            acked[word] |= UInt64(1) << UInt64(sequence & 63)
        }
        return sendTimes[sequence]
    }

    func isAcked(_ sequence: Int) -> Bool {
        let word = sequence >> 6
        return word < acked.count && acked[word] & (UInt64(1) << UInt64(sequence & 63)) != 0
    }
}
