/// The result of a `storm` run as a table or one JSON object.
struct StormReport {
    var outcome: StormOutcome

    private var settings: StormSettings { outcome.settings }

    func table() -> String {
        let o = outcome
        var rows: [(String, String)] = []
        rows.append(("run", "\(Format.grouped(settings.clients)) wss clients in \(settings.channels) channel(s), "
            + "\(settings.publishers) publisher(s), \(settings.liveMessages) messages live + \(settings.awayMessages) while away, "
            + (settings.resume ? "reconnect offering TLS sessions" : "reconnect with full handshakes (--no-resume)")))
        rows.append(("connect", phaseLine(o.connect) + cpuLine(o.connect, unit: "per full handshake + upgrade")))
        rows.append(("live", "\(o.liveDelivered ? "every client got every live message" : "NOT every live message arrived") "
            + "(\(Format.fixed(o.live.seconds, 2)) s to acknowledge)"))
        rows.append(("drop", "\(Format.grouped(o.drop.succeeded)) sockets closed at once, no WebSocket close; "
            + "\(Format.grouped(o.sessionsKept)) resumable TLS sessions kept"))
        rows.append(("away", "\(Format.grouped(settings.awayMessages)) messages published in "
            + "\(Format.fixed(o.away.seconds, 2)) s" + (o.away.rateLimited > 0 ? ", \(o.away.rateLimited) rate-limited and sent again" : "")))
        rows.append(("reconnect", phaseLine(o.reconnect) + ", \(Format.grouped(o.reconnect.resumed)) resumed"
            + cpuLine(o.reconnect, unit: o.reconnect.resumed == 0 ? "per full handshake + upgrade"
                : o.reconnect.resumed == o.reconnect.succeeded ? "per resumed handshake + upgrade" : "per handshake + upgrade")))
        rows.append(("all back", "\(Format.fixed(o.reconnect.seconds, 2)) s after the reconnect began"))
        rows.append(("catch-up", phaseLine(o.catchUp) + ", \(Format.grouped(o.catchUp.pages)) history pages"
            + (o.catchUp.rateLimited > 0 ? ", \(o.catchUp.rateLimited) rate-limited" : "")
            + cpuLine(o.catchUp, unit: "per client")))
        rows.append(("all caught up", "\(Format.fixed(o.allCaughtUpSeconds, 2)) s after the reconnect began"))
        rows.append(("messages", "missed \(o.missed), duplicates \(o.duplicates), unexpected \(o.unexpected), "
            + "foreign \(o.foreign); channel seqs \(o.seqsContiguous ? "1…N as acknowledged" : "NOT contiguous")"))
        rows.append(("tool CPU", [o.connect, o.reconnect, o.catchUp].map {
            "\($0.name) \(Format.fixed($0.toolCPUSeconds, 2)) s" + ($0.toolMillisecondsEach.map { " (\(Format.fixed($0, 3)) ms each)" } ?? "")
        }.joined(separator: ", ")))
        for phase in [o.connect, o.live, o.drop, o.away, o.reconnect, o.catchUp] {
            for (reason, count) in phase.failures.sorted(by: { $0.key < $1.key }) {
                rows.append(("\(phase.name) failure", "\(count) × \(reason)"))
            }
        }
        for (reason, count) in o.lostConnections.sorted(by: { $0.key < $1.key }) {
            rows.append(("lost", "\(count) × \(reason)"))
        }
        rows.append(("verdict", o.isClean ? "clean" : "NOT clean"))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { Format.padded($0.0, width) + "  " + $0.1 }.joined(separator: "\n") + "\n"
    }

    private func phaseLine(_ phase: StormPhaseFigures) -> String {
        var line = "\(Format.grouped(phase.succeeded))/\(Format.grouped(phase.total)) in \(Format.fixed(phase.seconds, 2)) s"
        if phase.failed > 0 { line += ", \(Format.grouped(phase.failed)) failed" }
        if phase.retries > 0 { line += ", \(Format.grouped(phase.retries)) retries" }
        return line
    }

    private func cpuLine(_ phase: StormPhaseFigures, unit: String) -> String {
        guard let seconds = phase.gatewayCPUSeconds, let each = phase.gatewayMillisecondsEach else { return "" }
        return "; gateway CPU \(Format.fixed(seconds, 2)) s, \(Format.fixed(each, 3)) ms \(unit)"
    }

    func json() -> String {
        let o = outcome
        var fields: [String] = []
        func add(_ key: String, _ value: String) { fields.append("\(JSONText.quote(key)):\(value)") }
        add("scenario", JSONText.quote("storm"))
        add("clients", String(settings.clients))
        add("channels", String(settings.channels))
        add("publishers", String(settings.publishers))
        add("liveMessages", String(settings.liveMessages))
        add("awayMessages", String(settings.awayMessages))
        add("resume", String(settings.resume))
        add("reconnectWindow", String(settings.reconnectWindow))
        add("connect", phaseJSON(o.connect))
        add("live", phaseJSON(o.live))
        add("liveDelivered", String(o.liveDelivered))
        add("drop", phaseJSON(o.drop))
        add("sessionsKept", String(o.sessionsKept))
        add("away", phaseJSON(o.away))
        add("reconnect", phaseJSON(o.reconnect))
        add("catchUp", phaseJSON(o.catchUp))
        add("allBackSeconds", Format.fixed(o.reconnect.seconds, 3))
        add("allCaughtUpSeconds", Format.fixed(o.allCaughtUpSeconds, 3))
        add("acknowledged", String(o.acknowledged))
        add("channelLastSeq", "[" + o.channelLastSeq.map(String.init).joined(separator: ",") + "]")
        add("missed", String(o.missed))
        add("duplicates", String(o.duplicates))
        add("unexpected", String(o.unexpected))
        add("foreign", String(o.foreign))
        add("lost", counts(o.lostConnections))
        add("clean", String(o.isClean))
        return "{" + fields.joined(separator: ",") + "}\n"
    }

    private func phaseJSON(_ phase: StormPhaseFigures) -> String {
        let optional = { (value: Double?) in value.map { Format.fixed($0, 4) } ?? "null" }
        var fields: [String] = []
        func add(_ key: String, _ value: String) { fields.append("\(JSONText.quote(key)):\(value)") }
        add("total", String(phase.total))
        add("succeeded", String(phase.succeeded))
        add("failed", String(phase.failed))
        add("seconds", Format.fixed(phase.seconds, 3))
        add("resumed", String(phase.resumed))
        add("retries", String(phase.retries))
        add("rateLimited", String(phase.rateLimited))
        add("pages", String(phase.pages))
        add("gatewayCPUSeconds", optional(phase.gatewayCPUSeconds))
        add("gatewayCPUMsEach", optional(phase.gatewayMillisecondsEach))
        add("toolCPUSeconds", Format.fixed(phase.toolCPUSeconds, 3))
        add("failures", counts(phase.failures))
        return "{" + fields.joined(separator: ",") + "}"
    }

    private func counts(_ reasons: [String: Int]) -> String {
        "{" + reasons.sorted { $0.key < $1.key }.map { "\(JSONText.quote($0.key)):\($0.value)" }.joined(separator: ",") + "}"
    }
}
