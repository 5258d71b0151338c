import ArgumentParser
import EventLoop

/// `chat-loadtest chaos`: kill -9 under load on one node, N times, then proves from the
/// store that every acknowledged message is in history exactly once and each channel's
/// seqs run 1…N without a gap (PROTOCOL.md §3, §4, §13 "Faults"). It owns the gateway as
/// a child process; `scripts/chaos` picks the binaries and a fresh data folder.
struct ChaosCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Cycles of kill -9 under load and restart: every acknowledged message stored exactly once, seq gapless.",
        discussion: """
            Starts `chat-gateway serve` (--gateway-binary) on a free loopback port with --data, every message \
            stored and the rates off, and creates --senders users in --channels group channels (every user in \
            every channel). Each cycle the senders send with a clientMessageId each, --window unanswered at a \
            time, for a random 0.2…--seconds-per-cycle s; then the gateway gets SIGKILL with sends in flight, is \
            restarted on the same data folder, and the senders reconnect and send every unanswered message again \
            with the same clientMessageId. After the last cycle the retries settle and every channel's history is \
            read (forward, `next` cursors) and checked. A cycle not back within --cycle-timeout s fails the run. \
            Exit status 1 unless every check holds.
            """)

    @Option(name: .customLong("gateway-binary"), help: "The chat-gateway executable to run, kill and restart.")
    var gatewayBinary: String

    @Option(help: "The gateway's data folder (created; fresh for a meaningful run).")
    var data: String

    @Option(name: .customLong("gateway-log"), help: "File for the gateway's output, appended across restarts.")
    var gatewayLog: String

    @Option(name: .customLong("pid-file"), help: "Where to write the gateway's pid at each start (for cleanup by a wrapper).")
    var pidFile: String?

    @Option(help: "Kill/restart cycles.")
    var cycles = 100

    @Option(help: "Sending users (each its own connection).")
    var senders = 8

    @Option(help: "Group channels; every sender is in each and sends to them in turn.")
    var channels = 3

    @Option(help: "Sends each sender keeps unanswered (the gateway allows 64 requests in flight per connection).")
    var window = 8

    @Option(name: .customLong("seconds-per-cycle"), help: "Longest send phase of a cycle; each lasts a random 0.2…this many seconds.")
    var secondsPerCycle: Double = 3

    @Option(name: .customLong("cycle-timeout"), help: "Seconds a cycle may take from the kill to senders back and reading.")
    var cycleTimeout: Double = 30

    @Option(name: .customLong("audit-timeout"), help: "Seconds to read every channel's history at the end.")
    var auditTimeout: Double = 300

    @Option(name: .customLong("admin-key"), help: "The gateway's admin.apiKey.")
    var adminKey = "dev-only-admin-key-change-me"

    func validate() throws {
        guard cycles >= 1, senders >= 1, channels >= 1 else { throw ValidationError("--cycles, --senders and --channels must be positive") }
        guard (1...32).contains(window) else { throw ValidationError("--window must be 1…32 (the gateway allows 64 in flight)") }
        guard secondsPerCycle >= 0.2 else { throw ValidationError("--seconds-per-cycle must be at least 0.2") }
        guard cycleTimeout > 0, auditTimeout > 0 else { throw ValidationError("--cycle-timeout and --audit-timeout must be positive") }
    }

    func run() throws {
        let started = MonotonicClock.now()
        let gateway = try ChaosGateway(binary: gatewayBinary, dataDirectory: data, logPath: gatewayLog, pidPath: pidFile)
        defer { gateway.stop() }
        try gateway.start(timeout: cycleTimeout)
        Console.error("chaos: gateway on 127.0.0.1:\(gateway.port), data \(data)")

        let group = EventLoopGroup(count: 1)
        let address = try GatewayAddress(url: "ws://127.0.0.1:\(gateway.port)", forceTLS: false)
        let admin = AdminClient(address: address, apiKey: adminKey, tls: nil, group: group, concurrency: 4)
        let roster = try ChaosRoster.provision(admin: admin, senders: senders, channels: channels)
        let run = try ChaosRun(gateway: gateway, roster: roster, loop: group.loops[0], window: window, cycleTimeout: cycleTimeout)

        var failure: String?
        var done = 0
        var audit: ChaosAudit?
        var storedPerChannel: [Int] = []
        do {
            try run.reconnect(deadline: MonotonicClock.now() + MonotonicClock.nanoseconds(cycleTimeout))
            for number in 1...cycles {
                let cycle = try run.cycle(sendSeconds: Double.random(in: 0.2...secondsPerCycle))
                done = number
                Console.error(ChaosReport.progress(number, of: cycles, cycle))
            }
            try run.settleRetries()
            Console.error("chaos: every send acknowledged; reading the histories")
            let histories = try run.readHistories(timeout: auditTimeout)
            storedPerChannel = histories.map(\.count)
            audit = ChaosAudit(histories: histories, acks: run.acks, userIDs: roster.userIDs, channelIDs: roster.channelIDs)
            run.closeAll()
        } catch {
            failure = "\(error)"
        }

        let report = ChaosReport(
            cyclesPlanned: cycles, cyclesDone: done, senders: senders, channelIDs: roster.channelIDs, window: window,
            secondsPerCycle: secondsPerCycle, counters: run.counters, unresolved: run.unresolved,
            lostAtRestart: run.lostAtRestart, restartSeconds: run.restartSeconds, audit: audit,
            storedPerChannel: storedPerChannel, failure: failure,
            wallSeconds: Double(MonotonicClock.now() - started) / 1e9)
        Console.output(report.table())
        if !report.isClean { throw ExitCode(1) }
    }
}
