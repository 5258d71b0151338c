/// Everything measured in one run, merged over the loops, before formatting.
struct RunOutcome: Sendable {
    var counters = LoopCounters()
    var latency = LatencyHistogram()
    var ackLatency = LatencyHistogram()
    var handshakeLatency = LatencyHistogram()
    var connectFailures: [String: Int] = [:]
    var closeReasons: [String: Int] = [:]
    var errorSamples: [String] = []
    var connectSeconds = 0.0
    /// Connections that never finished their upgrade before `--connect-timeout`.
    var connectTimedOut = 0
    var windowSeconds = 0.0
    var drainSeconds = 0.0
    var drainComplete = false
    var cpuTotal = CPUTime(user: 0, system: 0)
    var cpuWindow = CPUTime(user: 0, system: 0)
    /// One sample per progress line, for `--report`.
    var timeline: [TimelineSample] = []

    /// Deliveries each acknowledged message should get: every other member of its channel.
    var expectedPerMessage = 0
    var expectedDeliveries = 0
    /// Distinct deliveries of acknowledged messages.
    var receivedDeliveries = 0
    var lostDeliveries = 0
    /// Acknowledged messages that missed at least one recipient.
    var incompleteMessages = 0
    /// Deliveries of messages the gateway did not acknowledge (error or no reply).
    var unackedDeliveries = 0

    /// Compares what arrived with what was acknowledged, message by message.
    mutating func settleDeliveries(counts: DeliveryCounts, acked: [PublisherTally], groupSize: Int) {
        expectedPerMessage = Self.expectedPerMessage(groupSize: groupSize, connected: counters.connected)
        for tally in acked {
            for sequence in 0..<tally.sent {
                let count = counts.count(publisher: tally.publisher, sequence: sequence)
                if tally.isAcked(sequence) {
                    expectedDeliveries += expectedPerMessage
                    receivedDeliveries += min(count, expectedPerMessage)
                    if count < expectedPerMessage {
                        lostDeliveries += expectedPerMessage - count
                        incompleteMessages += 1
                    }
                } else {
                    unackedDeliveries += count
                }
            }
        }
    }
}

extension RunOutcome {
    /// Every other member of the sender's channel; with one channel, every other connected member.
    static func expectedPerMessage(groupSize: Int, connected: Int) -> Int {
        max(0, min(groupSize, connected) - 1)
    }
}

/// A publisher's sends at the end of the run.
struct PublisherTally: Sendable {
    var publisher: Int
    var sent: Int
    var ackedBits: [UInt64]

    func isAcked(_ sequence: Int) -> Bool {
        let word = sequence >> 6
        return word < ackedBits.count && ackedBits[word] & (UInt64(1) << UInt64(sequence & 63)) != 0
    }
}
