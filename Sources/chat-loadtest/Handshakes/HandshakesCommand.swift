import ArgumentParser

/// `chat-loadtest handshakes`: how fast the gateway takes new authenticated
/// connections — TCP (+ TLS) connect, upgrade with a token, 101 checked.
struct HandshakesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handshakes",
        abstract: "Connect + upgrade rate (TLS with wss:// or --tls): handshakes per second and their latency.",
        discussion: """
            Provisions users <prefix>-u0… and a token each, then opens --connections connections at up to
            --connect-rate per second, each a full TLS handshake (no session resumption) and a JWT-authenticated
            upgrade, and reports completed handshakes per second over the time from the first connect to the
            last 101, with the latency of each (connect → 101). The connections are closed at the end. Exit
            status 1 when a connection failed.
            """)

    @OptionGroup var gateway: GatewayOptions

    @Option(help: "Connections to open.")
    var connections = 5000

    @Option(name: .customLong("connect-rate"), help: "New connections per second the tool starts (the offered load).")
    var connectRate: Double = 10_000

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for every upgrade.")
    var connectTimeout: Double = 60

    @Option(name: .customLong("user-prefix"), help: "Prefix of the user ids the run creates.")
    var userPrefix = "hs"

    @Option(help: "The gateway's process id (same machine): its CPU time per handshake, from /proc.")
    var pid: Int32?

    func validate() throws {
        guard connections >= 1, connectRate > 0, connectTimeout > 0 else {
            throw ValidationError("--connections, --connect-rate and --connect-timeout must be positive")
        }
    }

    func run() throws {
        let setup = try ScenarioSetup(gateway: gateway)
        let tokens = try setup.provisionUsers(connections, prefix: userPrefix)
        let gatewayCPU = pid.map(ProcessCPU.init(pid:))
        let before = gatewayCPU?.seconds()
        var during: Double?
        let outcome = setup.holdConnections(tokens: tokens, scenario: "handshakes", connectRate: connectRate,
                                            connectTimeout: connectTimeout, hold: 0) { during = gatewayCPU?.seconds() }
        var gatewaySeconds: Double?
        if let before, let during { gatewaySeconds = during - before }
        let report = HandshakeReport(connections: connections, transport: setup.address.tls ? "wss" : "ws",
                                     connectRate: connectRate, outcome: outcome, gatewayCPUSeconds: gatewaySeconds)
        Console.output(gateway.json ? report.json() : report.table())
        if !report.isClean { throw ExitCode(1) }
    }
}

/// The result of a `handshakes` run as a table or one JSON object.
struct HandshakeReport {
    var connections: Int
    var transport: String
    var connectRate: Double
    var outcome: RunOutcome
    /// The gateway's CPU time from the first connect until every upgrade was answered.
    var gatewayCPUSeconds: Double?

    private var made: Int { outcome.counters.connected }
    private var failed: Int { outcome.counters.connectFailed + outcome.connectTimedOut }
    private var perSecond: Double { outcome.connectSeconds > 0 ? Double(made) / outcome.connectSeconds : 0 }
    var isClean: Bool { failed == 0 && made == connections }
    /// Milliseconds of gateway CPU per completed handshake.
    private var gatewayMillisecondsEach: Double? {
        guard let gatewayCPUSeconds, made > 0 else { return nil }
        return gatewayCPUSeconds * 1000 / Double(made)
    }

    func table() -> String {
        let h = outcome.handshakeLatency
        let ms = { (p: Double) in Format.fixed(h.milliseconds(atPercentile: p), 2) }
        var rows: [(String, String)] = []
        rows.append(("run", "\(connections) \(transport) connect + upgrade, offered \(Format.grouped(Int(connectRate)))/s"))
        rows.append(("connections", "made \(made), failed \(failed) in \(Format.fixed(outcome.connectSeconds, 2)) s"))
        rows.append(("throughput", "\(Format.grouped(Int(perSecond))) handshakes/s"))
        rows.append(("latency ms", "p50 \(ms(50)), p90 \(ms(90)), p99 \(ms(99)), max \(Format.fixed(h.maxMilliseconds, 2))"))
        if let gatewayCPUSeconds, let each = gatewayMillisecondsEach {
            rows.append(("gateway CPU", "\(Format.fixed(gatewayCPUSeconds, 2)) s, \(Format.fixed(each, 3)) ms per handshake"))
        }
        rows.append(("tool CPU", "user \(Format.fixed(outcome.cpuTotal.user, 2)) s, sys \(Format.fixed(outcome.cpuTotal.system, 2)) s"))
        for (reason, count) in outcome.connectFailures.sorted(by: { $0.key < $1.key }) {
            rows.append(("connect failure", "\(count) × \(reason)"))
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { Format.padded($0.0, width) + "  " + $0.1 }.joined(separator: "\n") + "\n"
    }

    func json() -> String {
        let h = outcome.handshakeLatency
        let number = { (v: Double) in Format.fixed(v, 3) }
        var fields: [String] = []
        func add(_ key: String, _ value: String) { fields.append("\(JSONText.quote(key)):\(value)") }
        add("scenario", JSONText.quote("handshakes"))
        add("transport", JSONText.quote(transport))
        add("connections", String(connections))
        add("made", String(made))
        add("failed", String(failed))
        add("seconds", number(outcome.connectSeconds))
        add("perSecond", number(perSecond))
        add("latencyMs", "{\"p50\":\(number(h.milliseconds(atPercentile: 50))),\"p99\":\(number(h.milliseconds(atPercentile: 99))),\"max\":\(number(h.maxMilliseconds))}")
        add("cpuSeconds", "{\"user\":\(number(outcome.cpuTotal.user)),\"system\":\(number(outcome.cpuTotal.system))}")
        if let gatewayCPUSeconds, let each = gatewayMillisecondsEach {
            add("gatewayCPUSeconds", number(gatewayCPUSeconds))
            add("gatewayMsPerHandshake", number(each))
        }
        add("clean", String(isClean))
        return "{" + fields.joined(separator: ",") + "}\n"
    }
}
