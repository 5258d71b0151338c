import EventLoop
#if canImport(Glibc)
import Glibc
#endif

/// Drives a cluster chaos run from the run's own thread: the clients send (paced) through
/// every node while the schedule kills and restarts nodes, Redis and PostgreSQL; clients
/// whose node died reconnect to the next node and send their unanswered messages again with
/// the same `clientMessageId`; they catch up after each reconnect, on `session.resync` and on
/// a skipped seq. Every wait is bounded, and a node that dies without being killed fails
/// the run. The clients live on one event loop, reached with `loop.queue.sync`.
final class ClusterChaosRun {
    let nodes: [ChaosGateway]
    let dependencies: ChaosDependencies
    let loop: EventLoop
    let senders: [ChaosSender]
    /// A member of every channel that only reads (the histories at the end).
    let auditor: ChaosSender
    /// For each sender, its channels' places in the roster's channel list.
    let senderChannels: [[Int]]
    private var lastConnectAttempt: [UInt64]
    private(set) var done: [ChaosSchedule.Fault] = []

    static let reconnectPause = MonotonicClock.nanoseconds(0.25)

    init(nodes: [ChaosGateway], dependencies: ChaosDependencies, roster: ClusterChaosRoster, loop: EventLoop,
         sendInterval: Double) throws(LoadTestError) {
        self.nodes = nodes
        self.dependencies = dependencies
        self.loop = loop
        var addresses: [GatewayAddress] = []
        for node in nodes { addresses.append(try GatewayAddress(url: "ws://127.0.0.1:\(node.port)", forceTLS: false)) }
        let interval = MonotonicClock.nanoseconds(sendInterval)
        senders = roster.senderIDs.indices.map { index in
            ChaosSender(index: index, userID: roster.senderIDs[index], token: roster.senderTokens[index],
                        channelIDs: roster.channels(of: index).map { roster.channelIDs[$0] }, addresses: addresses,
                        loop: loop, window: 4, sendInterval: interval, tracksDeliveries: true)
        }
        senderChannels = roster.senderIDs.indices.map { roster.channels(of: $0) }
        auditor = ChaosSender(index: 0, userID: roster.auditorID, token: roster.auditorToken, channelIDs: roster.channelIDs,
                              addresses: addresses, loop: loop, window: 1)
        lastConnectAttempt = Array(repeating: 0, count: senders.count)
    }

    private func onLoop<T>(_ body: () -> T) -> T {
        loop.queue.sync(execute: body)
    }

    private func checkNodes(_ what: String) throws(LoadTestError) {
        for (n, node) in nodes.enumerated() {
            if let death = node.unexpectedExit { throw LoadTestError("node \(n + 1) \(death) while \(what); log: \(node.logPath)") }
        }
        if let problem = onLoop({ (senders + [auditor]).lazy.flatMap(\.problems).first }) {
            throw LoadTestError("\(what): \(problem)")
        }
    }

    /// Reconnects the clients whose connection is gone, each at most every `reconnectPause`.
    private func reconnectClients() {
        let now = MonotonicClock.now()
        onLoop {
            for (index, sender) in senders.enumerated() where sender.needsConnection {
                guard now &- lastConnectAttempt[index] >= Self.reconnectPause else { continue }
                lastConnectAttempt[index] = now
                sender.connect()
            }
            for sender in senders where sender.isOpen { sender.pump() }
        }
    }

    private func apply(_ fault: ChaosSchedule.Fault) throws(LoadTestError) {
        switch fault {
        case .killNode(let n): nodes[n].killHard()
        case .startNode(let n): try nodes[n].start(timeout: 30)
        case .killRedis: try dependencies.killRedis()
        case .startRedis: try dependencies.startRedis()
        case .stopPostgres: try dependencies.stopPostgres()
        case .startPostgres: try dependencies.startPostgres()
        }
        done.append(fault)
    }

    /// Sends while the schedule runs; returns when its last step is done.
    func run(_ schedule: ChaosSchedule, progress: (String) -> Void) throws(LoadTestError) {
        onLoop { for sender in senders { sender.mode = .everything } }
        let start = MonotonicClock.now()
        var steps = schedule.steps[...]
        while let step = steps.first {
            try checkNodes("sending under faults")
            reconnectClients()
            let now = Double(MonotonicClock.now() - start) / 1e9
            if now >= step.at {
                steps.removeFirst()
                try apply(step.fault)
                progress("chaos: \(Format.fixed(now, 1)) s \(step.fault); acked \(Format.grouped(counters.acked))")
            } else {
                usleep(10_000)
            }
        }
    }

    /// After the faults: only retries, until every send has its `ok` and every client is connected.
    func settle(timeout: Double) throws(LoadTestError) {
        onLoop { for sender in senders { sender.mode = .retriesOnly } }
        let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(timeout)
        while !onLoop({ senders.allSatisfy { $0.isOpen && $0.unresolved == 0 } }) {
            try checkNodes("settling the retries")
            guard MonotonicClock.now() < deadline else {
                throw LoadTestError("settling the retries: \(unresolved) sends still unanswered after \(Format.fixed(timeout, 0)) s")
            }
            reconnectClients()
            usleep(10_000)
        }
    }

    /// Lets the last events and catch-up reads arrive.
    func quiet(seconds: Double) {
        let end = MonotonicClock.now() + MonotonicClock.nanoseconds(seconds)
        while MonotonicClock.now() < end {
            reconnectClients()
            usleep(10_000)
        }
    }

    /// Every channel's whole history through the auditor's connection.
    func readHistories(timeout: Double) throws(LoadTestError) -> [[ChaosWire.StoredMessage]] {
        let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(timeout)
        onLoop { auditor.connect() }
        while !onLoop({ auditor.isOpen }) {
            guard MonotonicClock.now() < deadline else { throw LoadTestError("the auditor could not connect") }
            if onLoop({ auditor.needsConnection }) { onLoop { auditor.connect() } }
            usleep(20_000)
        }
        onLoop { auditor.readHistories() }
        while onLoop({ auditor.historiesDone.count < auditor.channelCount }) {
            try checkNodes("reading the histories")
            guard MonotonicClock.now() < deadline else { throw LoadTestError("reading the histories: not done in time") }
            usleep(10_000)
        }
        return onLoop { auditor.histories }
    }

    var counters: ChaosCounters {
        onLoop { senders.reduce(ChaosCounters()) { $0 + $1.counters } }
    }

    var unresolved: Int {
        onLoop { senders.reduce(0) { $0 + $1.unresolved } }
    }

    /// Every `ok`, with its channel as the roster's index.
    var acks: [ChaosAck] {
        onLoop {
            senders.enumerated().flatMap { index, sender in
                sender.acks.map {
                    ChaosAck(channelIndex: senderChannels[index][$0.channelIndex], seq: $0.seq, messageID: $0.messageID,
                             clientMessageID: $0.clientMessageID, senderIndex: index)
                }
            }
        }
    }

    /// What the clients saw live, against each channel's stored end.
    func deliveries(lastSeqs: [Int64]) -> ChaosDeliveryFigures {
        onLoop {
            var figures = ChaosDeliveryFigures()
            for (index, sender) in senders.enumerated() {
                guard let deliveries = sender.deliveries else { continue }
                let missing = senderChannels[index].enumerated().reduce(0) { sum, channel in
                    sum + deliveries.missing(channel.offset, upTo: lastSeqs[channel.element])
                }
                figures.add(resyncs: deliveries.resyncs, missing: missing, catchUpReads: deliveries.catchUpReads,
                            gapsSeenLive: deliveries.gapsSeenLive)
            }
            return figures
        }
    }

    func closeAll() {
        onLoop { for sender in senders + [auditor] { sender.close() } }
    }
}

/// The clients' view summed: how many got `session.resync`, and whether each has every
/// message of its channels (live, in a reply, or caught up from history).
struct ChaosDeliveryFigures {
    var clients = 0
    var resynced = 0
    var resyncEvents = 0
    var resyncedComplete = 0
    var complete = 0
    var missing = 0
    var catchUpReads = 0
    var gapsSeenLive = 0

    mutating func add(resyncs: Int, missing: Int, catchUpReads: Int, gapsSeenLive: Int) {
        clients += 1
        resyncEvents += resyncs
        self.missing += missing
        self.catchUpReads += catchUpReads
        self.gapsSeenLive += gapsSeenLive
        if missing == 0 { complete += 1 }
        if resyncs > 0 {
            resynced += 1
            if missing == 0 { resyncedComplete += 1 }
        }
    }
}
