/// The figures of a chaos run, printed as a two-column table on standard output, and
/// the verdict: clean only when nothing acknowledged was lost, nothing stored twice,
/// no seq skipped, and every send ended with its `ok`.
struct ChaosReport {
    var cyclesPlanned: Int
    var cyclesDone: Int
    var senders: Int
    var channelIDs: [String]
    var window: Int
    var secondsPerCycle: Double
    var counters: ChaosCounters
    /// Sends never acknowledged by the end (must be 0).
    var unresolved: Int
    /// Acknowledged seqs past their channel's end right after a restart (must be 0).
    var lostAtRestart: Int
    /// Seconds from each restart to `/healthz` 200.
    var restartSeconds: [Double]
    /// nil when the run stopped before the audit.
    var audit: ChaosAudit?
    var storedPerChannel: [Int]
    /// Why the run stopped early, or replies it could not use.
    var failure: String?
    var wallSeconds: Double

    var isClean: Bool {
        failure == nil && cyclesDone == cyclesPlanned && unresolved == 0 && lostAtRestart == 0
            && counters.mismatched == 0 && (audit?.isClean ?? false)
    }

    func table() -> String {
        var rows: [(String, String)] = []
        let c = counters
        rows.append(("cycles", "\(cyclesDone) of \(cyclesPlanned) (send 0.2–\(Format.fixed(secondsPerCycle, 1)) s, kill -9, restart on the same data)"))
        rows.append(("senders", "\(senders) users × \(channelIDs.count) group channels, up to \(window) sends in flight each"))
        rows.append(("messages acknowledged", "\(Format.grouped(c.acked)) of \(Format.grouped(c.acked + unresolved)) issued"))
        rows.append(("sends cut by a kill", "\(Format.grouped(c.unansweredAtKill)) (in flight with no reply when the gateway died)"))
        rows.append(("retried", "\(Format.grouped(c.retried)) messages in \(Format.grouped(c.retryFrames)) frames: "
                     + "\(Format.grouped(c.retriesAlreadyStored)) already stored, \(Format.grouped(c.retriesNewlyStored)) newly stored"))
        if let audit {
            let perChannel = zip(channelIDs, storedPerChannel).map { "\($0) \(Format.grouped($1))" }.joined(separator: ", ")
            rows.append(("stored total", "\(Format.grouped(audit.storedTotal)) (\(perChannel))"))
            rows.append(("duplicates", "\(audit.duplicates) (seq \(audit.duplicateSeqs), message id \(audit.duplicateMessageIDs), "
                         + "clientMessageId \(audit.duplicateClientMessageIDs))"))
            rows.append(("gaps", "\(audit.gaps)"))
            rows.append(("lost acknowledged", "\(audit.lostAcknowledged) (past a channel's end at a restart: \(lostAtRestart))"))
            rows.append(("stored without an ok", "\(audit.storedWithoutAck)"))
            if audit.outOfOrder > 0 { rows.append(("history out of order", "\(audit.outOfOrder)")) }
        } else {
            rows.append(("stored total", "not audited"))
            rows.append(("lost acknowledged", "past a channel's end at a restart: \(lostAtRestart)"))
        }
        rows.append(("unresolved sends", "\(unresolved)"))
        rows.append(("error replies", "\(c.errors) (retried)"))
        if c.mismatched > 0 { rows.append(("ok for another message", "\(c.mismatched)")) }
        let sorted = restartSeconds.sorted()
        if let last = sorted.last {
            rows.append(("restart to healthy", "median \(Format.fixed(sorted[sorted.count / 2], 2)) s, max \(Format.fixed(last, 2)) s"))
        }
        rows.append(("wall time", "\(Format.fixed(wallSeconds, 1)) s"))
        if let failure { rows.append(("failure", failure)) }
        for example in audit?.examples ?? [] { rows.append(("finding", example)) }
        rows.append(("result", isClean ? "PASS" : "FAIL"))
        return Format.table(rows)
    }

    /// The per-cycle line on standard error.
    static func progress(_ number: Int, of total: Int, _ cycle: ChaosRun.Cycle) -> String {
        let c = cycle.counters
        var line = "chaos: cycle \(number)/\(total): sent \(Format.grouped(c.sent)) in \(Format.fixed(cycle.sendSeconds, 2)) s"
        line += ", acked \(Format.grouped(c.acked)), \(c.unansweredAtKill) cut by the kill"
        if c.retried + c.retriesAlreadyStored + c.retriesNewlyStored > 0 {
            line += "; retries settled: \(c.retriesAlreadyStored) already stored, \(c.retriesNewlyStored) newly stored"
        }
        line += "; healthy in \(Format.fixed(cycle.restartSeconds, 2)) s, back in \(Format.fixed(cycle.backSeconds, 2)) s"
        line += "; last seqs \(cycle.lastSeqs.map(String.init).joined(separator: "/"))"
        if c.errors > 0 { line += "; \(c.errors) error replies" }
        if cycle.lostAtRestart > 0 { line += "; LOST \(cycle.lostAtRestart) acknowledged" }
        return line
    }
}
