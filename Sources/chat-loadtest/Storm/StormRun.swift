import Dispatch
import EventLoop
#if canImport(Glibc)
import Glibc
#endif

/// A `storm` run once the users and channels exist. The publishers connect first (not
/// measured); then every client connects with a full handshake, the publishers send
/// `liveMessages` that every client receives live, all clients are dropped at once, the
/// publishers send `awayMessages`, every client reconnects (offering its session unless
/// `resume` is off) and, once all are back, catches up from its last seq. Each phase is
/// timed and billed the gateway's and the tool's CPU; at the end every client's seqs are
/// checked against what its channel stored. The coordinating thread only launches, waits
/// and reads the loops with `queue.sync`.
final class StormRun {
    let settings: StormSettings
    let roster: StormProvisioner.Roster
    private let group: EventLoopGroup
    private let clients: [StormClient]
    private let publishers: [StormPublisher]
    private let gatewayCPU: ProcessCPU?

    init(settings: StormSettings, setup: ScenarioSetup, roster: StormProvisioner.Roster) {
        self.settings = settings
        self.roster = roster
        group = setup.group
        clients = roster.clientTokens.enumerated().map { index, token in
            StormClient(loop: setup.group.next(), address: setup.address, tls: setup.tls, token: token,
                        channelID: roster.channelIDs[roster.channel(ofClient: index)], pageLimit: settings.pageLimit,
                        budgetPerSecond: settings.requestsPerSecond, budgetBurst: settings.requestBurst)
        }
        let runTag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        publishers = roster.publisherTokens.enumerated().map { index, token in
            StormPublisher(index: index, loop: setup.group.next(), address: setup.address, tls: setup.tls, token: token,
                           channelIDs: roster.channelIDs, runTag: runTag, textSize: settings.textSize, window: 32,
                           budget: StormRequestBudget(perSecond: settings.requestsPerSecond, burst: settings.requestBurst))
        }
        gatewayCPU = settings.gatewayPID.map(ProcessCPU.init(pid:))
    }

    func run() -> StormOutcome {
        var outcome = StormOutcome(settings: settings)
        defer { closeAll() }
        let publishersUp = measure("publishers connect", publishers, window: 0) { $0.connect(in: $1) }
        guard publishersUp.failed == 0 else {
            outcome.connect.failures = publishersUp.failures
            outcome.connect.failed = settings.clients
            return outcome
        }

        outcome.connect = measure("connect", clients, window: settings.connectWindow) { $0.connect(in: $1) }
        settle()
        outcome.live = publish(settings.liveMessages, "live")
        outcome.liveDelivered = waitUntilDelivered()
        settle()
        outcome.drop = measure("drop", clients, window: 0) { [resume = settings.resume] in
            $0.drop(keepSession: resume, in: $1)
        }
        outcome.sessionsKept = onLoops(clients) { $0.reduce(0) { $0 + ($1.session != nil ? 1 : 0) } }
        settle()
        outcome.away = publish(settings.awayMessages, "away")
        settle()

        let reconnectStart = MonotonicClock.now()
        outcome.reconnect = measure("reconnect", clients, window: settings.reconnectWindow) { $0.connect(in: $1) }
        outcome.catchUp = measure("catch-up", clients, window: 0) { $0.catchUp(in: $1) }
        outcome.allCaughtUpSeconds = Double(lastEnd - reconnectStart) / 1e9
        check(&outcome)
        return outcome
    }

    /// When the phase `measure` ran last ended.
    private var lastEnd: UInt64 = 0

    /// Runs one phase over `participants` (at most `window` at once, 0: all) and bills it
    /// the gateway's and the tool's CPU from its start to its last participant.
    private func measure<P: StormConnection>(_ name: String, _ participants: [P], window: Int,
                                             _ start: @escaping @Sendable (P, StormPhase) -> Void) -> StormPhaseFigures {
        let gatewayBefore = gatewayCPU?.seconds()
        let toolBefore = CPUTime.now().total
        let phase = StormPhase(name: name, total: participants.count, timeoutSeconds: settings.phaseTimeout) { index, phase in
            let participant = participants[index]
            participant.loop.execute { start(participant, phase) }
        }
        phase.launch(window: window)
        _ = phase.wait { phase in
            var line = "\(Format.grouped(phase.finished))/\(Format.grouped(phase.total)) done"
            let (resumed, retries, failed) = (phase.resumed.load(ordering: .relaxed), phase.retries.load(ordering: .relaxed),
                                              phase.failed.load(ordering: .relaxed))
            if resumed > 0 { line += ", \(Format.grouped(resumed)) resumed" }
            if retries > 0 { line += ", \(Format.grouped(retries)) retries" }
            if failed > 0 { line += ", \(Format.grouped(failed)) failed" }
            return line
        }
        let gatewayAfter = gatewayCPU?.seconds()
        let figures = StormPhaseFigures(
            phase, gatewayCPUSeconds: gatewayBefore.flatMap { before in gatewayAfter.map { $0 - before } },
            toolCPUSeconds: CPUTime.now().total - toolBefore)
        lastEnd = phase.endedAt
        Console.error("chat-loadtest: \(name): \(Format.grouped(figures.succeeded))/\(Format.grouped(figures.total)) in "
            + "\(Format.fixed(figures.seconds, 2)) s" + (figures.resumed > 0 ? ", \(Format.grouped(figures.resumed)) resumed" : "")
            + (figures.gatewayCPUSeconds.map { ", gateway CPU \(Format.fixed($0, 2)) s" } ?? "")
            + ", tool CPU \(Format.fixed(figures.toolCPUSeconds, 2)) s")
        return figures
    }

    /// The publishers send `count` messages between them.
    private func publish(_ count: Int, _ name: String) -> StormPhaseFigures {
        let share = publishers.indices.map { count / publishers.count + ($0 < count % publishers.count ? 1 : 0) }
        return measure(name, publishers, window: 0) { publisher, phase in publisher.publish(share[publisher.index], in: phase) }
    }

    /// Waits until every client received every live message (up to 30 s).
    private func waitUntilDelivered() -> Bool {
        let last = channelLastSeq()
        let lastByID = Dictionary(uniqueKeysWithValues: zip(roster.channelIDs, last))
        let deadline = MonotonicClock.now() + 30_000_000_000
        while true {
            let behind = onLoops(clients) { $0.reduce(0) { $0 + ($1.seen.count < Int(lastByID[$1.channelID] ?? 0) ? 1 : 0) } }
            if behind == 0 { return true }
            if MonotonicClock.now() >= deadline {
                Console.error("chat-loadtest: live: \(behind) clients still missing live messages after 30 s")
                return false
            }
            MonotonicClock.sleep(until: MonotonicClock.now() + 100_000_000)
        }
    }

    private func settle() {
        guard settings.settle > 0 else { return }
        MonotonicClock.sleep(until: MonotonicClock.now() + MonotonicClock.nanoseconds(settings.settle))
    }

    /// Each channel's highest acknowledged seq, over the publishers.
    private func channelLastSeq() -> [Int64] {
        var last = Array(repeating: Int64(0), count: roster.channelIDs.count)
        for publisher in publishers {
            let seqs = publisher.loop.queue.sync { publisher.lastSeq }
            for (channel, seq) in seqs.enumerated() { last[channel] = max(last[channel], seq) }
        }
        return last
    }

    /// Compares every client's seqs with what its channel stored.
    private func check(_ outcome: inout StormOutcome) {
        outcome.channelLastSeq = channelLastSeq()
        outcome.acknowledged = publishers.reduce(0) { sum, publisher in
            sum + publisher.loop.queue.sync { publisher.acked.reduce(0, +) }
        }
        let lastByID = Dictionary(uniqueKeysWithValues: zip(roster.channelIDs, outcome.channelLastSeq))
        for loop in group.loops {
            let mine = clients.filter { $0.loop === loop }
            loop.queue.sync {
                for client in mine {
                    let last = lastByID[client.channelID] ?? 0
                    outcome.missed += client.seen.missing(upTo: last)
                    outcome.unexpected += client.seen.unexpected(after: last)
                    outcome.duplicates += client.duplicates
                    outcome.foreign += client.foreign
                    if let reason = client.lostReason { outcome.lostConnections[reason, default: 0] += 1 }
                }
            }
        }
    }

    /// Sums `count` over the participants of each loop, on that loop.
    private func onLoops<P: StormConnection>(_ participants: [P], _ count: ([P]) -> Int) -> Int {
        var total = 0
        for loop in group.loops {
            let mine = participants.filter { $0.loop === loop }
            total += loop.queue.sync { count(mine) }
        }
        return total
    }

    private func closeAll() {
        let everyone: [StormConnection] = clients.map { $0 } + publishers.map { $0 }
        for participant in everyone {
            participant.loop.execute { participant.close() }
        }
        MonotonicClock.sleep(until: MonotonicClock.now() + 500_000_000)
    }
}
