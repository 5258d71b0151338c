import ArgumentParser

/// `chat-loadtest room`: one group channel of `--members` live connections;
/// `--publishers` of them send, every member counts and times what arrives.
struct RoomCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "room",
        abstract: "Fan-out in one group channel: throughput, loss, duplicates and end-to-end latency.",
        discussion: """
            Provisions users <prefix>-u0…, tokens and one group channel through the admin API on the same
            host:port, connects every member, has --publishers of them send message.send (open loop at --rate
            msgs/s in total, or saturating with --window unacknowledged sends each when --rate is 0), and checks
            that every acknowledged message reaches every other member exactly once. Exit status 1 when the
            run was not clean (failed connections, errors, loss, duplicates).
            """)

    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var traffic: TrafficOptions

    @Option(help: "Members of the channel, one connection each.")
    var members = 1000

    @Option(help: """
        How many of the members send (members 0…N-1, at most --members). Default: open loop, enough that none \
        exceeds --user-rate; saturating, 10.
        """)
    var publishers: Int?

    @Option(name: .customLong("stalled-members"), help: """
        Extra channel members that connect and never read (slow consumers; plain ws only). The report says how \
        the gateway closed each one; they are not counted in deliveries.
        """)
    var stalledMembers = 0

    @Option(name: .customLong("block-each"), help: "Outside users (not members) that every member blocks.")
    var blockEach = 0

    @Flag(name: .customLong("read-and-type"), help: """
        Every member also sends typing.start once a second and channel.markRead for each message it receives         (PROTOCOL.md §14), while the run sends. Raise limits.connectionRequestsPerSecond when each member receives         more than 50 messages a second.
        """)
    var readAndType = false

    @Option(help: """
        Every member also acts on the newest message it received once a second (PROTOCOL.md §15): react \
        (toggles a reaction: a reaction storm) or mix (reactions, edits of its own messages, replies). Needs \
        limits.userChangesPerSecond of at least 1.
        """)
    var lifecycle: LifecycleMix?

    @Flag(help: """
        Ramp instead of one run: open-loop steps of --ramp-step seconds on the same connections, from --ramp-start         msgs/s, ×--ramp-factor each step, until a step's p99 passes --p99-bound or it loses a delivery; reports the         highest rate within the bound.
        """)
    var ramp = false

    @Option(name: .customLong("ramp-start"), help: "First ramp rate, msgs/s.")
    var rampStart: Double = 100

    @Option(name: .customLong("ramp-factor"), help: "Rate multiplier per ramp step.")
    var rampFactor: Double = 1.25

    @Option(name: .customLong("ramp-max"), help: "Highest ramp rate tried, msgs/s (sets the publishers needed).")
    var rampMax: Double = 2000

    @Option(name: .customLong("ramp-step"), help: "Seconds measured per ramp step (after 1 s of warm-up).")
    var rampStep: Double = 5

    @Option(name: .customLong("p99-bound"), help: "The ramp's latency bound, ms.")
    var p99Bound: Double = 20

    private var publisherCount: Int {
        if let publishers { return publishers }
        if ramp { return min(members, max(1, Int((rampMax / traffic.userRate).rounded(.up)))) }
        return traffic.rate > 0 ? min(members, traffic.publishersForRate) : min(10, members)
    }

    func validate() throws {
        guard members >= 2 else { throw ValidationError("--members must be at least 2") }
        guard (1...members).contains(publisherCount) else { throw ValidationError("--publishers must be 1…members") }
        guard blockEach >= 0 else { throw ValidationError("--block-each must be ≥ 0") }
        if traffic.rate > 0, publishers == nil, traffic.publishersForRate > members {
            throw ValidationError("""
                --rate \(traffic.rate) needs more than --members publishers at --user-rate \(traffic.userRate); raise the \
                gateway's limits.userMessagesPerSecond and pass it as --user-rate
                """)
        }
        if ramp {
            guard rampStart > 0, rampFactor > 1, rampMax >= rampStart, rampStep > 0, p99Bound > 0 else {
                throw ValidationError("--ramp needs --ramp-start > 0, --ramp-factor > 1, --ramp-max ≥ --ramp-start, positive --ramp-step and --p99-bound")
            }
            guard stalledMembers == 0, traffic.report == nil else {
                throw ValidationError("--ramp does not combine with --stalled-members or --report")
            }
        }
        guard stalledMembers >= 0 else { throw ValidationError("--stalled-members must be ≥ 0") }
        if stalledMembers > 0 && (gateway.tls || gateway.url.contains { $0.hasPrefix("wss://") }) {
            throw ValidationError("--stalled-members works over plain ws only")
        }
    }

    func run() throws {
        let setup = try ScenarioSetup(gateway: gateway)
        let provisioner = RoomProvisioner(admin: setup.admin, prefix: traffic.userPrefix, members: members, channels: 1,
                                          blockEach: blockEach, stalled: stalledMembers)
        let (room, provisionSeconds) = try setup.provision(provisioner, settle: traffic.settle)
        var settings = RunSettings(traffic: traffic, scenario: "room", members: members, channels: 1,
                                   publishers: publisherCount, blockEach: blockEach, loops: gateway.loops)
        settings.readAndType = readAndType
        settings.lifecycle = lifecycle
        let stalled = try room.stalledTokens.map { token throws(LoadTestError) in
            try StalledMember(address: setup.address, token: token)
        }
        let run = RoomRun(settings: settings, plan: setup.plan(for: room, settings), tokens: room.tokens, group: setup.group)
        if ramp {
            let steps = run.runRamp(from: rampStart, factor: rampFactor, maximum: rampMax, stepSeconds: rampStep,
                                    boundMs: p99Bound)
            let report = RampReport(steps: steps, boundMs: p99Bound, members: members)
            Console.output(gateway.json ? report.json() : report.table())
            return
        }
        let outcome = run.run()
        var report = RunReport(settings: settings, provisionSeconds: provisionSeconds, outcome: outcome)
        for member in stalled {
            let (ending, bytes) = member.drain()
            report.stalledEndings[ending.description, default: 0] += 1
            report.stalledBytes += bytes
        }
        try report.publish(json: gateway.json, htmlPath: traffic.report)
    }
}
