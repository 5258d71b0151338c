import EventLoop
#if canImport(Glibc)
import Glibc
#endif

/// What every traffic scenario starts from: the gateway's address, the tool's
/// loops, an admin client, and the provisioning step with its timing.
struct ScenarioSetup {
    let address: GatewayAddress
    let tls: TLSContext?
    let group: EventLoopGroup
    let admin: AdminClient
    let deflate: Bool

    init(gateway: GatewayOptions) throws {
        deflate = gateway.deflate
        address = try GatewayAddress(url: gateway.url, forceTLS: gateway.tls)
        tls = address.tls ? try TLSContext.insecureClient() : nil
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

    func plan(for room: RoomProvisioner.Room, _ settings: RunSettings) -> RunPlan {
        RunPlan(address: address, tls: tls, channelIDs: room.channelIDs, groupSize: settings.members / settings.channels,
                members: settings.members, publishers: settings.publishers, textSize: settings.textSize, deflate: deflate)
    }
}
