/// What the senders counted while sending, summed over senders for the report and
/// compared cycle to cycle for the progress line.
struct ChaosCounters: Sendable {
    /// `message.send` frames written, first sends and retries.
    var sent = 0
    /// Distinct messages that got an `ok` (each at most once: an acknowledged send is never sent again).
    var acked = 0
    /// Distinct messages sent more than once because a kill came before their reply.
    var retried = 0
    /// `message.send` frames that were retries (a message retried across two kills counts twice).
    var retryFrames = 0
    /// Retried messages whose `ok` named a message already stored before the restart
    /// (its seq at or below the channel's last seq read right after the restart).
    var retriesAlreadyStored = 0
    /// Retried messages that the retry itself stored (seq above that mark).
    var retriesNewlyStored = 0
    /// Sends in flight, without a reply, when their connection died.
    var unansweredAtKill = 0
    /// `error` replies to a send (the send is retried later).
    var errors = 0
    /// `ok` replies whose message is not the one sent: another text, clientMessageId, sender or channel.
    var mismatched = 0

    static func + (left: ChaosCounters, right: ChaosCounters) -> ChaosCounters {
        ChaosCounters(
            sent: left.sent + right.sent, acked: left.acked + right.acked, retried: left.retried + right.retried,
            retryFrames: left.retryFrames + right.retryFrames,
            retriesAlreadyStored: left.retriesAlreadyStored + right.retriesAlreadyStored,
            retriesNewlyStored: left.retriesNewlyStored + right.retriesNewlyStored,
            unansweredAtKill: left.unansweredAtKill + right.unansweredAtKill, errors: left.errors + right.errors,
            mismatched: left.mismatched + right.mismatched)
    }

    static func - (left: ChaosCounters, right: ChaosCounters) -> ChaosCounters {
        ChaosCounters(
            sent: left.sent - right.sent, acked: left.acked - right.acked, retried: left.retried - right.retried,
            retryFrames: left.retryFrames - right.retryFrames,
            retriesAlreadyStored: left.retriesAlreadyStored - right.retriesAlreadyStored,
            retriesNewlyStored: left.retriesNewlyStored - right.retriesNewlyStored,
            unansweredAtKill: left.unansweredAtKill - right.unansweredAtKill, errors: left.errors - right.errors,
            mismatched: left.mismatched - right.mismatched)
    }
}
