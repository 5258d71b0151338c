import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// The result of a `room` or `rooms` run as a table, one JSON object or an HTML page.
struct RunReport {
    var settings: RunSettings
    var provisionSeconds: Double
    var outcome: RunOutcome
    /// `--stalled-members`: how the gateway ended each, and the bytes they had received.
    var stalledEndings: [String: Int] = [:]
    var stalledBytes = 0

    private var c: LoopCounters { outcome.counters }
    private var deliveriesPerSecond: Double {
        outcome.windowSeconds > 0 ? Double(c.deliveriesInWindow) / outcome.windowSeconds : 0
    }
    private var ackedPerSecond: Double {
        outcome.windowSeconds > 0 ? Double(c.ackedInWindow) / outcome.windowSeconds : 0
    }
    private var mode: String { settings.rate > 0 ? "open-loop" : "saturate" }
    private var failedConnections: Int { c.connectFailed + outcome.connectTimedOut }

    /// A clean run: every member connected and stayed, every send acknowledged,
    /// every acknowledged message reached every other member exactly once.
    var isClean: Bool {
        failedConnections == 0 && c.disconnected == 0 && c.errors == 0 && c.chatterErrors == 0 && outcome.lostDeliveries == 0
            && c.duplicates == 0 && c.echoes == 0 && c.inFlight == 0
    }

    /// Prints the table or JSON, writes the HTML page when asked; exit status 1 when the run was not clean.
    func publish(json: Bool, htmlPath: String?) throws {
        Console.output(json ? self.json() : table())
        if let htmlPath {
            let page = HTMLReport.render(title: "chat-loadtest \(settings.scenario): \(shape)", summary: rows(),
                                         samples: outcome.timeline)
            guard let file = fopen(htmlPath, "w") else { throw LoadTestError("cannot write \(htmlPath): errno \(errno)") }
            fputs(page, file)
            fclose(file)
            Console.error("chat-loadtest: report written to \(htmlPath)")
        }
        if !isClean { throw ExitCode(1) }
    }

    private var shape: String {
        let rate = settings.rate > 0 ? "\(Format.fixed(settings.rate, 0)) msgs/s" : "saturate (window \(settings.window))"
        let channels = settings.channels == 1
            ? "\(settings.members) members"
            : "\(settings.channels) channels × \(settings.members / settings.channels) members"
        return "\(channels), \(settings.publishers) publishers, \(rate), \(settings.textSize)-byte texts"
    }

    func table() -> String {
        let rows = rows()
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { Format.padded($0.0, width) + "  " + $0.1 }.joined(separator: "\n") + "\n"
    }

    /// Bytes of events other than `message.new` (typing, read marks) each member received
    /// per second of the send period (warm-up and measured window).
    private var otherEventBytesPerMemberPerSecond: Double {
        let seconds = settings.warmup + outcome.windowSeconds
        guard settings.members > 0, seconds > 0 else { return 0 }
        return Double(c.otherFrameBytes) / Double(settings.members) / seconds
    }

    private func rows() -> [(String, String)] {
        let ms = { (v: Double) in Format.fixed(v, 3) }
        var rows: [(String, String)] = []
        rows.append(("run", "\(settings.scenario): \(shape), block-each \(settings.blockEach), \(settings.loops) loop(s)"))
        rows.append(("phases", "provision \(Format.fixed(provisionSeconds, 1)) s, connect \(Format.fixed(outcome.connectSeconds, 2)) s, warm-up \(Format.fixed(settings.warmup, 1)) s, measured \(Format.fixed(outcome.windowSeconds, 1)) s, drain \(Format.fixed(outcome.drainSeconds, 2)) s\(outcome.drainComplete ? "" : " (incomplete)")"))
        rows.append(("connections", "made \(c.connected), failed \(failedConnections), disconnected \(c.disconnected)"))
        rows.append(("messages", "sent \(Format.grouped(c.sent)), acked \(Format.grouped(c.acked)), errors \(c.errors), unanswered \(c.inFlight)"))
        rows.append(("deliveries", "expected \(Format.grouped(outcome.expectedDeliveries)), received \(Format.grouped(outcome.receivedDeliveries)), loss \(Format.grouped(outcome.lostDeliveries)) (\(Format.percent(outcome.lostDeliveries, of: outcome.expectedDeliveries)) %), duplicates \(c.duplicates)"))
        if outcome.incompleteMessages > 0 || outcome.unackedDeliveries > 0 || c.echoes > 0 || c.foreign > 0 {
            rows.append(("", "incomplete messages \(outcome.incompleteMessages), deliveries of unacked messages \(outcome.unackedDeliveries), to the sender itself \(c.echoes), foreign \(c.foreign)"))
        }
        if settings.readAndType {
            rows.append(("read and type", "typing.start sent \(Format.grouped(c.typingSent)), channel.markRead sent \(Format.grouped(c.markReadSent)), errors \(c.chatterErrors), events received \(Format.grouped(c.otherFrames)) (\(Format.fixed(otherEventBytesPerMemberPerSecond, 0)) bytes per member per second)"))
        }
        if let lifecycle = settings.lifecycle {
            let perMember = c.reactionsSent > 0 && settings.members > 1
                ? Double(c.reactionEventBytes) / Double(c.reactionsSent) / Double(settings.members - 1) : 0
            rows.append(("lifecycle", "\(lifecycle.rawValue): reactions \(Format.grouped(c.reactionsSent)), edits \(Format.grouped(c.editsSent)), replies \(Format.grouped(c.repliesSent)) sent, errors \(c.chatterErrors); received reaction events \(Format.grouped(c.reactionEvents)) (\(Format.fixed(perMember, 1)) bytes per reaction per member), message.updated \(Format.grouped(c.updateEvents)), replies \(Format.grouped(c.replyDeliveries))"))
        }
        rows.append(("throughput", "\(Format.grouped(Int(deliveriesPerSecond))) deliveries/s, \(Format.fixed(ackedPerSecond, 1)) acked msgs/s (measured window)"))
        rows.append(("latency ms", latencyRow(outcome.latency, ms)))
        rows.append(("ack ms", latencyRow(outcome.ackLatency, ms)))
        let windowShare = outcome.windowSeconds > 0 ? outcome.cpuWindow.total / outcome.windowSeconds * 100 : 0
        rows.append(("tool CPU", "user \(Format.fixed(outcome.cpuTotal.user, 2)) s, sys \(Format.fixed(outcome.cpuTotal.system, 2)) s; \(Format.fixed(windowShare, 0)) % of a core in the window"))
        for (reason, count) in outcome.connectFailures.sorted(by: { $0.key < $1.key }) {
            rows.append(("connect failure", "\(count) × \(reason)"))
        }
        for (reason, count) in outcome.closeReasons.sorted(by: { $0.key < $1.key }) {
            rows.append(("closed by peer", "\(count) × \(reason)"))
        }
        for sample in outcome.errorSamples { rows.append(("error reply", sample)) }
        if !stalledEndings.isEmpty {
            let endings = stalledEndings.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
            rows.append(("stalled members", "\(endings); \(Format.grouped(stalledBytes)) bytes reached them"))
        }
        return rows
    }

    private func latencyRow(_ h: LatencyHistogram, _ ms: (Double) -> String) -> String {
        "p50 \(ms(h.milliseconds(atPercentile: 50))), p90 \(ms(h.milliseconds(atPercentile: 90))), "
            + "p99 \(ms(h.milliseconds(atPercentile: 99))), p99.9 \(ms(h.milliseconds(atPercentile: 99.9))), "
            + "max \(ms(h.maxMilliseconds)) (\(Format.grouped(Int(h.count))) samples)"
    }

    func json() -> String {
        var fields: [String] = []
        func add(_ key: String, _ value: String) { fields.append("\(JSONText.quote(key)):\(value)") }
        func number(_ v: Double) -> String { Format.fixed(v, 3) }
        func object(_ pairs: [(String, String)]) -> String {
            "{" + pairs.map { "\(JSONText.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
        }
        func counts(_ map: [String: Int]) -> String {
            object(map.sorted { $0.key < $1.key }.map { ($0.key, String($0.value)) })
        }
        func latency(_ h: LatencyHistogram) -> String {
            object([("p50", number(h.milliseconds(atPercentile: 50))), ("p90", number(h.milliseconds(atPercentile: 90))),
                    ("p99", number(h.milliseconds(atPercentile: 99))), ("p999", number(h.milliseconds(atPercentile: 99.9))),
                    ("max", number(h.maxMilliseconds)), ("mean", number(h.meanMilliseconds)), ("samples", String(h.count))])
        }
        add("scenario", JSONText.quote(settings.scenario))
        add("mode", JSONText.quote(mode))
        add("members", String(settings.members))
        add("channels", String(settings.channels))
        add("publishers", String(settings.publishers))
        add("rate", number(settings.rate))
        add("window", String(settings.window))
        add("textSize", String(settings.textSize))
        add("blockEach", String(settings.blockEach))
        add("loops", String(settings.loops))
        add("seconds", object([("provision", number(provisionSeconds)), ("connect", number(outcome.connectSeconds)),
                               ("warmup", number(settings.warmup)), ("measured", number(outcome.windowSeconds)),
                               ("drain", number(outcome.drainSeconds))]))
        add("drainComplete", String(outcome.drainComplete))
        add("connections", object([("made", String(c.connected)), ("failed", String(failedConnections)),
                                   ("disconnected", String(c.disconnected)), ("failures", counts(outcome.connectFailures)),
                                   ("closes", counts(outcome.closeReasons))]))
        if settings.readAndType {
            add("readAndType", object([("typingSent", String(c.typingSent)), ("markReadSent", String(c.markReadSent)),
                                       ("errors", String(c.chatterErrors)), ("eventsReceived", String(c.otherFrames)),
                                       ("eventBytesPerMemberPerSecond", number(otherEventBytesPerMemberPerSecond))]))
        }
        if let lifecycle = settings.lifecycle {
            let perMember = c.reactionsSent > 0 && settings.members > 1
                ? Double(c.reactionEventBytes) / Double(c.reactionsSent) / Double(settings.members - 1) : 0
            add("lifecycle", object([("mix", "\"\(lifecycle.rawValue)\""), ("reactionsSent", String(c.reactionsSent)),
                                     ("editsSent", String(c.editsSent)), ("repliesSent", String(c.repliesSent)),
                                     ("errors", String(c.chatterErrors)), ("reactionEvents", String(c.reactionEvents)),
                                     ("reactionEventBytes", String(c.reactionEventBytes)),
                                     ("bytesPerReactionPerMember", number(perMember)),
                                     ("updateEvents", String(c.updateEvents)), ("replyDeliveries", String(c.replyDeliveries))]))
        }
        add("messages", object([("sent", String(c.sent)), ("acked", String(c.acked)), ("errors", String(c.errors)),
                                ("unanswered", String(c.inFlight)), ("ackedPerSecond", number(ackedPerSecond))]))
        add("deliveries", object([("expected", String(outcome.expectedDeliveries)), ("received", String(outcome.receivedDeliveries)),
                                  ("loss", String(outcome.lostDeliveries)), ("duplicates", String(c.duplicates)),
                                  ("incompleteMessages", String(outcome.incompleteMessages)),
                                  ("unacked", String(outcome.unackedDeliveries)), ("toSender", String(c.echoes)),
                                  ("foreign", String(c.foreign)), ("inWindow", String(c.deliveriesInWindow)),
                                  ("perSecond", number(deliveriesPerSecond))]))
        add("latencyMs", latency(outcome.latency))
        add("ackLatencyMs", latency(outcome.ackLatency))
        add("cpuSeconds", object([("user", number(outcome.cpuTotal.user)), ("system", number(outcome.cpuTotal.system)),
                                  ("window", number(outcome.cpuWindow.total))]))
        if !stalledEndings.isEmpty {
            add("stalled", object([("endings", counts(stalledEndings)), ("bytesReceived", String(stalledBytes))]))
        }
        add("errorSamples", "[" + outcome.errorSamples.map(JSONText.quote).joined(separator: ",") + "]")
        add("clean", String(isClean))
        return "{" + fields.joined(separator: ",") + "}\n"
    }
}
