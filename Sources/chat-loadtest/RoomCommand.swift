import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import EventLoop

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

    @Option(help: "Members of the channel, one connection each.")
    var members = 1000

    @Option(help: """
        How many of the members send (members 0…N-1, at most --members). Default: open loop, enough that none \
        exceeds --user-rate; saturating, 10.
        """)
    var publishers: Int?

    @Option(name: .customLong("user-rate"), help: "The gateway's limits.userMessagesPerSecond, to pick --publishers for --rate.")
    var userRate: Double = 5

    private var publisherCount: Int {
        if let publishers { return publishers }
        guard rate > 0 else { return min(10, members) }
        return min(members, max(1, Int((rate / userRate).rounded(.up))))
    }

    @Option(name: .customLong("stalled-members"), help: """
        Extra channel members that connect and never read (slow consumers; plain ws only). The report says how \
        the gateway closed each one; they are not counted in deliveries.
        """)
    var stalledMembers = 0

    @Option(help: "Total messages per second over all publishers, open loop; 0 saturates.")
    var rate: Double = 0

    @Option(help: "Seconds measured (after the warm-up).")
    var duration: Double = 10

    @Option(help: "Seconds of sending before the measured window.")
    var warmup: Double = 2

    @Option(help: "Bytes of each message text (at least the stamp).")
    var size = 64

    @Option(name: .customLong("block-each"), help: "Outside users (not members) that every member blocks.")
    var blockEach = 0

    @Option(help: "Seconds to wait after provisioning before connecting (lets the gateway settle after bulk writes).")
    var settle: Double = 0

    @Option(name: .customLong("connect-rate"), help: "New connections per second.")
    var connectRate: Double = 2000

    @Option(help: "Unacknowledged sends per publisher when --rate is 0.")
    var window = 32

    @Option(help: "Seconds to wait after the window for outstanding replies and deliveries.")
    var drain: Double = 5

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for every upgrade.")
    var connectTimeout: Double = 60

    @Option(name: .customLong("user-prefix"), help: "Prefix of the user ids the run creates.")
    var userPrefix = "lt"

    func validate() throws {
        guard members >= 2 else { throw ValidationError("--members must be at least 2") }
        guard (1...members).contains(publisherCount) else { throw ValidationError("--publishers must be 1…members") }
        guard rate >= 0, duration > 0, warmup >= 0, drain >= 0, settle >= 0 else {
            throw ValidationError("--rate, --warmup and --drain must be ≥ 0, --duration > 0")
        }
        guard (1...5000).contains(size) else { throw ValidationError("--size must be 1…5000 (maxTextLength)") }
        guard blockEach >= 0 else { throw ValidationError("--block-each must be ≥ 0") }
        guard userRate > 0 else { throw ValidationError("--user-rate must be positive") }
        if rate > 0, publishers == nil, rate / userRate > Double(members) {
            throw ValidationError("""
                --rate \(rate) needs more than --members publishers at --user-rate \(userRate); raise the gateway's \
                limits.userMessagesPerSecond and pass it as --user-rate
                """)
        }
        guard stalledMembers >= 0 else { throw ValidationError("--stalled-members must be ≥ 0") }
        if stalledMembers > 0 && (gateway.tls || gateway.url.hasPrefix("wss://")) {
            throw ValidationError("--stalled-members works over plain ws only")
        }
        guard window >= 1, connectRate > 0 else {
            throw ValidationError("--window and --connect-rate must be positive")
        }
    }

    func run() throws {
        let address = try GatewayAddress(url: gateway.url, forceTLS: gateway.tls)
        let tlsContext = address.tls ? try TLSContext.insecureClient() : nil
        let group = EventLoopGroup(count: gateway.loops)
        let settings = RunSettings(
            members: members, publishers: publisherCount, rate: rate, duration: duration, warmup: warmup, textSize: size,
            blockEach: blockEach, window: window, drain: drain, connectRate: connectRate,
            connectTimeout: connectTimeout, loops: gateway.loops)

        let provisionStart = MonotonicClock.now()
        let admin = AdminClient(address: address, apiKey: gateway.adminKey, tls: tlsContext, group: group, concurrency: gateway.adminConcurrency)
        let provisioner = RoomProvisioner(admin: admin, prefix: userPrefix, members: members, blockEach: blockEach,
                                          stalled: stalledMembers)
        let room = try provisioner.provision { Console.error("chat-loadtest: \($0)") }
        let provisionSeconds = Double(MonotonicClock.now() - provisionStart) / 1e9
        Console.error("chat-loadtest: provisioned channel \(room.channelID) in \(Format.fixed(provisionSeconds, 1)) s")
        if settle > 0 {
            Console.error("chat-loadtest: settling for \(Format.fixed(settle, 1)) s")
            usleep(UInt32(min(settle, 3600) * 1_000_000))
        }

        let plan = RunPlan(address: address, tls: tlsContext, channelID: room.channelID, members: members,
                           publishers: publisherCount, textSize: size)
        let stalled = try room.stalledTokens.map { token throws(LoadTestError) in
            try StalledMember(address: address, token: token)
        }
        let outcome = RoomRun(settings: settings, plan: plan, tokens: room.tokens, group: group).run()
        var report = RunReport(settings: settings, provisionSeconds: provisionSeconds, outcome: outcome)
        for member in stalled {
            let (ending, bytes) = member.drain()
            report.stalledEndings[ending.description, default: 0] += 1
            report.stalledBytes += bytes
        }
        Console.output(gateway.json ? report.json() : report.table())
        if !report.isClean { throw ExitCode(1) }
    }
}
