import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `chat-loadtest idle`: N authenticated `/v1/ws` connections that send nothing,
/// held for a time; with `--pid`, the gateway's resident memory per connection.
struct IdleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idle",
        abstract: "Idle connections held for a time: connections made/failed and the gateway's RSS per connection.",
        discussion: """
            Provisions users <prefix>-u0… and a token each through the admin API, reads the gateway's VmRSS \
            (/proc/PID/status, same machine), opens every connection at --connect-rate, holds them --hold \
            seconds, reads VmRSS again while they are open, then closes them (1000). Exit status 1 when a \
            connection failed or was closed by the gateway.
            """)

    @OptionGroup var gateway: GatewayOptions

    @Option(help: "Connections to open and hold.")
    var connections = 10_000

    @Option(help: "Seconds to hold them once all are open.")
    var hold: Double = 10

    @Option(help: "The gateway's process id, to read its resident memory (same machine).")
    var pid: Int32?

    @Option(name: .customLong("connect-rate"), help: "New connections per second.")
    var connectRate: Double = 2000

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for every upgrade.")
    var connectTimeout: Double = 120

    @Option(name: .customLong("user-prefix"), help: "Prefix of the user ids the run creates.")
    var userPrefix = "idle"

    func validate() throws {
        guard connections >= 1, hold >= 0, connectRate > 0, connectTimeout > 0 else {
            throw ValidationError("--connections, --connect-rate and --connect-timeout must be positive, --hold ≥ 0")
        }
        if let pid, residentKiB(of: pid) == nil { throw ValidationError("no readable /proc/\(pid)/status") }
    }

    func run() throws {
        let setup = try ScenarioSetup(gateway: gateway)
        let tokens = try setup.provisionUsers(connections, prefix: userPrefix)
        let before = pid.flatMap(residentKiB(of:))
        var during: Int?
        let outcome = setup.holdConnections(tokens: tokens, scenario: "idle", connectRate: connectRate,
                                            connectTimeout: connectTimeout, hold: hold) {
            during = pid.flatMap(residentKiB(of:))
        }
        let report = IdleReport(connections: connections, transport: setup.address.tls ? "wss" : "ws", hold: hold,
                                outcome: outcome, rssBeforeKiB: before, rssDuringKiB: during)
        Console.output(gateway.json ? report.json() : report.table())
        if !report.isClean { throw ExitCode(1) }
    }
}

/// VmRSS of a process in KiB, from /proc/PID/status.
func residentKiB(of pid: Int32) -> Int? {
    guard let file = fopen("/proc/\(pid)/status", "r") else { return nil }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") {
            return Int(text.dropFirst(6).filter { $0.isNumber })
        }
    }
    return nil
}

/// The result of an `idle` run as a table or one JSON object.
struct IdleReport {
    var connections: Int
    var transport: String
    var hold: Double
    var outcome: RunOutcome
    var rssBeforeKiB: Int?
    var rssDuringKiB: Int?

    private var made: Int { outcome.counters.connected }
    private var failed: Int { outcome.counters.connectFailed + outcome.connectTimedOut }
    private var growthKiB: Int? {
        guard let rssBeforeKiB, let rssDuringKiB else { return nil }
        return rssDuringKiB - rssBeforeKiB
    }
    private var perConnectionKiB: Double? {
        guard let growthKiB, made > 0 else { return nil }
        return Double(growthKiB) / Double(made)
    }

    var isClean: Bool { failed == 0 && outcome.counters.disconnected == 0 && made == connections }

    func table() -> String {
        var rows: [(String, String)] = []
        rows.append(("run", "\(connections) idle \(transport) connections held \(Format.fixed(hold, 1)) s"))
        rows.append(("connections", "made \(made), failed \(failed), closed by the gateway \(outcome.counters.disconnected) (connect \(Format.fixed(outcome.connectSeconds, 2)) s)"))
        if let rssBeforeKiB, let rssDuringKiB, let growthKiB, let perConnectionKiB {
            rows.append(("gateway RSS", "\(Format.grouped(rssBeforeKiB)) KiB before, \(Format.grouped(rssDuringKiB)) KiB held: +\(Format.grouped(growthKiB)) KiB, \(Format.fixed(perConnectionKiB, 2)) KiB per connection"))
        }
        rows.append(("tool CPU", "user \(Format.fixed(outcome.cpuTotal.user, 2)) s, sys \(Format.fixed(outcome.cpuTotal.system, 2)) s"))
        for (reason, count) in outcome.connectFailures.sorted(by: { $0.key < $1.key }) {
            rows.append(("connect failure", "\(count) × \(reason)"))
        }
        for (reason, count) in outcome.closeReasons.sorted(by: { $0.key < $1.key }) {
            rows.append(("closed by peer", "\(count) × \(reason)"))
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { Format.padded($0.0, width) + "  " + $0.1 }.joined(separator: "\n") + "\n"
    }

    func json() -> String {
        var fields: [String] = []
        func add(_ key: String, _ value: String) { fields.append("\(JSONText.quote(key)):\(value)") }
        func optional(_ value: Int?) -> String { value.map(String.init) ?? "null" }
        add("scenario", JSONText.quote("idle"))
        add("transport", JSONText.quote(transport))
        add("connections", String(connections))
        add("holdSeconds", Format.fixed(hold, 3))
        add("made", String(made))
        add("failed", String(failed))
        add("closedByGateway", String(outcome.counters.disconnected))
        add("connectSeconds", Format.fixed(outcome.connectSeconds, 3))
        add("rssBeforeKiB", optional(rssBeforeKiB))
        add("rssHeldKiB", optional(rssDuringKiB))
        add("rssPerConnectionKiB", perConnectionKiB.map { Format.fixed($0, 3) } ?? "null")
        add("cpuSeconds", "{\"user\":\(Format.fixed(outcome.cpuTotal.user, 3)),\"system\":\(Format.fixed(outcome.cpuTotal.system, 3))}")
        add("clean", String(isClean))
        return "{" + fields.joined(separator: ",") + "}\n"
    }
}
