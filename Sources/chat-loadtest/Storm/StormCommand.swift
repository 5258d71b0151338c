import ArgumentParser

/// `chat-loadtest storm`: N TLS clients dropped at once reconnect and catch up.
struct StormCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storm",
        abstract: "Reconnect storm: N wss clients dropped at once reconnect (resuming TLS sessions) and catch up from history.",
        discussion: """
            Provisions clients <prefix>-c0… in --channels group channels (client i in channel i mod C) and \
            --publishers users in every channel. Every client connects with a full TLS handshake (--connect-window \
            at a time); the publishers send --live-messages, which every client receives live and notes the last seq \
            of; then every socket is closed at once (no WebSocket close, no close_notify), the publishers send \
            --messages while the clients are away, and every client reconnects (--reconnect-window at a time, 0: all \
            at once), offering the TLS session of its last connection unless --no-resume, retrying with backoff \
            until --phase-timeout. Once all are back, each pages message.history from afterSeq = its last seq, \
            following next until it is null, within the gateway's per-connection request budget \
            (--requests-per-second, --request-burst: the gateway's limits.connectionRequestsPerSecond and \
            limits.connectionRequestBurst). Reports how long until all are back and all caught up, how many \
            handshakes resumed, messages missed and duplicated (both must be 0) and, with --gateway-pid (same \
            machine), the gateway's CPU per handshake + upgrade in each connect phase. Exit status 1 unless clean.
            """)

    @OptionGroup var gateway: GatewayOptions

    @Option(help: "Clients to connect, drop and reconnect.")
    var clients = 10_000

    @Option(help: "Group channels the clients are split over.")
    var channels = 4

    @Option(help: "Publishing users, each a member of every channel (each has its own request budget).")
    var publishers = 4

    @Option(name: .customLong("live-messages"), help: "Messages sent while every client is connected.")
    var liveMessages = 40

    @Option(help: "Messages sent while the clients are away.")
    var messages = 400

    @Option(help: "Text size in bytes.")
    var size = 64

    @Option(name: .customLong("connect-window"), help: "First connects in progress at once.")
    var connectWindow = 200

    @Option(name: .customLong("reconnect-window"), help: "Reconnects in progress at once (0: all at once).")
    var reconnectWindow = 0

    @Flag(name: .customLong("no-resume"), help: "Reconnect with full handshakes (the clients forget their TLS sessions).")
    var noResume = false

    @Option(name: .customLong("gateway-pid"), help: "The gateway's process id, to read its CPU time from /proc (same machine).")
    var gatewayPID: Int32?

    @Option(name: .customLong("phase-timeout"), help: "Seconds any one phase may take.")
    var phaseTimeout: Double = 180

    @Option(help: "Seconds to wait between phases, so the gateway's work for one is not billed to the next.")
    var settle: Double = 2

    @Option(name: .customLong("requests-per-second"), help: "The gateway's limits.connectionRequestsPerSecond (0: off).")
    var requestsPerSecond: Double = 50

    @Option(name: .customLong("request-burst"), help: "The gateway's limits.connectionRequestBurst.")
    var requestBurst = 100

    @Option(name: .customLong("page-limit"), help: "message.history limit (1–100).")
    var pageLimit = 100

    @Option(name: .customLong("user-prefix"), help: "Prefix of the user ids the run creates.")
    var userPrefix = "storm"

    func validate() throws {
        guard clients >= 1, channels >= 1, channels <= clients, publishers >= 1 else {
            throw ValidationError("--clients and --publishers must be positive, --channels 1…clients")
        }
        guard liveMessages >= 0, messages >= 0, size >= 1, connectWindow >= 1, reconnectWindow >= 0 else {
            throw ValidationError("--live-messages, --messages, --reconnect-window ≥ 0; --size, --connect-window ≥ 1")
        }
        guard phaseTimeout > 0, settle >= 0, requestsPerSecond >= 0, requestBurst >= 1, (1...100).contains(pageLimit) else {
            throw ValidationError("--phase-timeout > 0, --settle ≥ 0, --requests-per-second ≥ 0, --request-burst ≥ 1, --page-limit 1…100")
        }
        if let gatewayPID, ProcessCPU(pid: gatewayPID).seconds() == nil {
            throw ValidationError("no readable /proc/\(gatewayPID)/stat")
        }
    }

    func run() throws {
        let setup = try ScenarioSetup(gateway: gateway)
        guard setup.address.tls else { throw ValidationError("storm measures TLS: give a wss:// URL or --tls") }
        let provisioner = StormProvisioner(admin: setup.admin, prefix: userPrefix, clients: clients, channels: channels,
                                           publishers: publishers)
        let roster = try provisioner.provision { Console.error("chat-loadtest: \($0)") }
        let settings = StormSettings(
            clients: clients, channels: channels, publishers: publishers, liveMessages: liveMessages,
            awayMessages: messages, textSize: size, connectWindow: connectWindow, reconnectWindow: reconnectWindow,
            resume: !noResume, phaseTimeout: phaseTimeout, settle: settle, requestsPerSecond: requestsPerSecond,
            requestBurst: requestBurst, pageLimit: pageLimit, gatewayPID: gatewayPID)
        let report = StormReport(outcome: StormRun(settings: settings, setup: setup, roster: roster).run())
        Console.output(gateway.json ? report.json() : report.table())
        if !report.outcome.isClean { throw ExitCode(1) }
    }
}
