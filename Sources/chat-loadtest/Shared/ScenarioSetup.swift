import EventLoop
#if canImport(Glibc)
import Glibc
#endif

/// What every traffic scenario starts from: the gateway's address, the tool's
/// loops, an admin client, and the provisioning step with its timing.
struct ScenarioSetup {
    /// The first `--url`: the admin API and single-node scenarios.
    let address: GatewayAddress
    /// Every `--url`: member connections go round-robin.
    let addresses: [GatewayAddress]
    let tls: TLSContext?
    let group: EventLoopGroup
    let admin: AdminClient
    let deflate: Bool

    init(gateway: GatewayOptions) throws {
        deflate = gateway.deflate
        addresses = try gateway.url.map { try GatewayAddress(url: $0, forceTLS: gateway.tls) }
        address = addresses[0]  // validate() requires one
        tls = addresses.contains(where: \.tls) ? try TLSContext.insecureClient() : nil
        group = EventLoopGroup(count: gateway.loops)
        admin = AdminClient(address: address, apiKey: gateway.adminKey, tls: tls, group: group, concurrency: gateway.adminConcurrency)
    }

    /// Provisions, then waits `settle` seconds; returns the room and the seconds provisioning took.
    func provision(_ provisioner: RoomProvisioner, settle: Double) throws(LoadTestError) -> (RoomProvisioner.Room, Double) {
        let start = MonotonicClock.now()
        let room = try provisioner.provision { Console.error("chat-loadtest: \($0)") }
        let seconds = Double(MonotonicClock.now() - start) / 1e9
        Console.error("chat-loadtest: provisioned \(room.channelIDs.count) channel(s) in \(Format.fixed(seconds, 1)) s")
        if settle > 0 {
            Console.error("chat-loadtest: settling for \(Format.fixed(settle, 1)) s")
            usleep(UInt32(min(settle, 3600) * 1_000_000))
        }
        return (room, seconds)
    }

    /// Users `prefix-u0…` and a token each, no channel (`idle`, `handshakes`).
    func provisionUsers(_ count: Int, prefix: String) throws(LoadTestError) -> [String] {
        let provisioner = RoomProvisioner(admin: admin, prefix: prefix, members: count, blockEach: 0)
        return try provisioner.provisionUsers { Console.error("chat-loadtest: \($0)") }
    }

    /// One connection per token that sends nothing, opened at `connectRate`, held `hold`
    /// seconds; `atEnd` runs while they are still open.
    func holdConnections(tokens: [String], scenario: String, connectRate: Double, connectTimeout: Double, hold: Double,
                         atEnd: () -> Void = {}) -> RunOutcome {
        let settings = RunSettings(
            scenario: scenario, members: tokens.count, channels: 1, publishers: 0, rate: 0, duration: hold, warmup: 0,
            textSize: 0, blockEach: 0, window: 1, drain: 0, connectRate: connectRate, connectTimeout: connectTimeout,
            loops: group.loops.count)
        let plan = RunPlan(addresses: addresses, tls: tls, channelIDs: [], groupSize: tokens.count, members: tokens.count,
                           publishers: 0, textSize: 0, deflate: deflate)
        return RoomRun(settings: settings, plan: plan, tokens: tokens, group: group).runIdle(hold: hold, atEnd: atEnd)
    }

    func plan(for room: RoomProvisioner.Room, _ settings: RunSettings,
              placement: MemberPlacement = .roundRobin) -> RunPlan {
        RunPlan(addresses: addresses, tls: tls, channelIDs: room.channelIDs, groupSize: settings.members / settings.channels,
                members: settings.members, publishers: settings.publishers, textSize: settings.textSize, deflate: deflate,
                placement: placement, writesEachFrame: settings.writesEachFrame)
    }
}
