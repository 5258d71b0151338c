import ArgumentParser

/// `chat-loadtest rooms`: many small group channels, every member sending.
struct RoomsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rooms",
        abstract: "Many small group channels, every member sending: throughput, loss, duplicates and latency.",
        discussion: """
            Provisions --channels × --channel-members users <prefix>-u0…, a token each and --channels group channels
            (members 0…K-1 in the first, K…2K-1 in the second, …) through the admin API, connects every member and
            has every one of them send: open loop at --rate msgs/s in total (raise the gateway's
            limits.userMessagesPerSecond when --rate / members exceeds it, and pass it as --user-rate), or
            saturating with --window unacknowledged sends each when --rate is 0. Every acknowledged message must
            reach the other members of its channel exactly once. Exit status 1 when the run was not clean.
            """)

    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var traffic: TrafficOptions

    @Option(help: "Group channels.")
    var channels = 1000

    @Option(name: .customLong("channel-members"), help: "Members of each channel, one connection each.")
    var channelMembers = 5

    @Option(help: """
        With several --url: which node each member connects to. member: round-robin by member (every channel on \
        every node); channel: each channel's members on one node; pair: each channel's members on two neighbouring \
        nodes.
        """)
    var placement = MemberPlacement.roundRobin

    private var members: Int { channels * channelMembers }

    func validate() throws {
        guard channels >= 1, channelMembers >= 2 else {
            throw ValidationError("--channels must be positive and --channel-members at least 2")
        }
        guard members <= 100_000 else { throw ValidationError("--channels × --channel-members must be at most 100,000") }
        if traffic.rate > 0, traffic.publishersForRate > members {
            throw ValidationError("""
                --rate \(traffic.rate) is more than \(members) members can send at --user-rate \(traffic.userRate); \
                raise the gateway's limits.userMessagesPerSecond and pass it as --user-rate
                """)
        }
    }

    func run() throws {
        let setup = try ScenarioSetup(gateway: gateway)
        let provisioner = RoomProvisioner(admin: setup.admin, prefix: traffic.userPrefix, members: members,
                                          channels: channels, blockEach: 0)
        let (room, provisionSeconds) = try setup.provision(provisioner, settle: traffic.settle)
        let settings = RunSettings(traffic: traffic, scenario: "rooms", members: members, channels: channels,
                                   publishers: members, blockEach: 0, loops: gateway.loops)
        let outcome = RoomRun(settings: settings, plan: setup.plan(for: room, settings, placement: placement), tokens: room.tokens, group: setup.group).run()
        let report = RunReport(settings: settings, provisionSeconds: provisionSeconds, outcome: outcome)
        try report.publish(json: gateway.json, htmlPath: traffic.report)
    }
}
