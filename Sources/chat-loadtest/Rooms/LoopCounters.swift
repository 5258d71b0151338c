/// Counts kept per event loop and summed for the progress line and the report.
struct LoopCounters: Sendable {
    var connected = 0
    var connectFailed = 0
    /// Open connections that the gateway (or the network) closed during the run.
    var disconnected = 0
    var sent = 0
    var sentInWindow = 0
    var acked = 0
    var ackedInWindow = 0
    var errors = 0
    /// Publishers' sends still waiting for a reply.
    var inFlight = 0
    /// Distinct `message.new` deliveries of this tool's messages.
    var deliveries = 0
    var deliveriesInWindow = 0
    var duplicates = 0
    /// `message.new` events that reached their own sender's connection.
    var echoes = 0
    /// `message.new` events not stamped by this tool (or from an unknown publisher).
    var foreign = 0
    /// Other server frames (events such as `channel.updated`, typing and read events,
    /// unmatched replies), and the bytes of those that are events.
    var otherFrames = 0
    var otherFrameBytes = 0
    /// `--read-and-type`: `typing.start` and `channel.markRead` sent, their error replies.
    var typingSent = 0
    var markReadSent = 0
    var chatterErrors = 0
    /// `--lifecycle`: reactions, edits and replies sent; the reaction events received (and
    /// their bytes), the `message.updated` events, the replies' `message.new`.
    var reactionsSent = 0
    var editsSent = 0
    var repliesSent = 0
    var reactionEvents = 0
    var reactionEventBytes = 0
    var updateEvents = 0
    var replyDeliveries = 0

    mutating func add(_ o: LoopCounters) {
        connected += o.connected
        connectFailed += o.connectFailed
        disconnected += o.disconnected
        sent += o.sent
        sentInWindow += o.sentInWindow
        acked += o.acked
        ackedInWindow += o.ackedInWindow
        errors += o.errors
        inFlight += o.inFlight
        deliveries += o.deliveries
        deliveriesInWindow += o.deliveriesInWindow
        duplicates += o.duplicates
        echoes += o.echoes
        foreign += o.foreign
        otherFrames += o.otherFrames
        otherFrameBytes += o.otherFrameBytes
        typingSent += o.typingSent
        markReadSent += o.markReadSent
        chatterErrors += o.chatterErrors
        reactionsSent += o.reactionsSent
        editsSent += o.editsSent
        repliesSent += o.repliesSent
        reactionEvents += o.reactionEvents
        reactionEventBytes += o.reactionEventBytes
        updateEvents += o.updateEvents
        replyDeliveries += o.replyDeliveries
    }
}
