/// Everything one `storm` run measured and checked, before formatting.
struct StormOutcome: Sendable {
    var settings: StormSettings
    var connect = StormPhaseFigures(name: "connect")
    var live = StormPhaseFigures(name: "live")
    var drop = StormPhaseFigures(name: "drop")
    var away = StormPhaseFigures(name: "away")
    var reconnect = StormPhaseFigures(name: "reconnect")
    var catchUp = StormPhaseFigures(name: "catch-up")
    /// Whether every client got every live message before the drop.
    var liveDelivered = false
    /// Clients holding a resumable TLS session when they were dropped.
    var sessionsKept = 0
    /// From the start of the reconnect to the last client's last page.
    var allCaughtUpSeconds = 0.0
    /// Messages each channel stored (highest acknowledged seq), and acknowledged sends.
    var channelLastSeq: [Int64] = []
    var acknowledged = 0
    /// Over every client: stored messages of its channel never received, received twice,
    /// received with a seq its channel never had, `message.new` of another channel.
    var missed = 0
    var duplicates = 0
    var unexpected = 0
    var foreign = 0
    /// Open connections the gateway ended (close frame or reset) while the run needed them.
    var lostConnections: [String: Int] = [:]

    /// Seqs of each channel run 1…N with N the acknowledged sends: no gap, nothing unacknowledged.
    var seqsContiguous: Bool { channelLastSeq.reduce(0) { $0 + Int($1) } == acknowledged }

    var isClean: Bool {
        let phases = [connect, live, drop, away, reconnect, catchUp]
        return phases.allSatisfy { $0.failed == 0 } && missed == 0 && duplicates == 0 && unexpected == 0
            && seqsContiguous && lostConnections.isEmpty
    }
}
