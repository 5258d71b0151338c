import EventLoop
#if canImport(Glibc)
import Glibc
#endif

/// Drives the senders through the kills, from the run's own thread: each cycle lets
/// them send, SIGKILLs the gateway while sends are in flight, restarts it on the same
/// data folder, reconnects them and reads each channel's last seq. Every wait is
/// bounded (a cycle that is not back within `cycleTimeout` fails the run) and gives up
/// at once when the gateway dies without being killed.
///
/// The senders live on one event loop; this class reaches them only through
/// `loop.queue.sync`, polling every few milliseconds for what it waits on.
final class ChaosRun {
    /// What one cycle did, for its progress line.
    struct Cycle {
        var sendSeconds: Double
        var counters: ChaosCounters
        var restartSeconds: Double
        var backSeconds: Double
        var lastSeqs: [Int64]
        var lostAtRestart: Int
    }

    let gateway: ChaosGateway
    let loop: EventLoop
    let senders: [ChaosSender]
    let channelCount: Int
    let cycleTimeout: Double
    /// Each channel's last seq, read after the latest (re)start.
    private(set) var lastSeqs: [Int64]
    /// Acknowledged messages whose seq was above their channel's last seq right after the
    /// next restart: acknowledged, then gone from the store. Must stay 0.
    private(set) var lostAtRestart = 0
    private(set) var restartSeconds: [Double] = []
    /// Per sender, how many of its acks the restart checks have looked at.
    private var acksChecked: [Int]

    init(gateway: ChaosGateway, roster: ChaosRoster, loop: EventLoop, window: Int, cycleTimeout: Double) throws(LoadTestError) {
        self.gateway = gateway
        self.loop = loop
        self.cycleTimeout = cycleTimeout
        channelCount = roster.channelIDs.count
        let address = try GatewayAddress(url: "ws://127.0.0.1:\(gateway.port)", forceTLS: false)
        senders = roster.userIDs.indices.map {
            ChaosSender(index: $0, userID: roster.userIDs[$0], token: roster.tokens[$0], channelIDs: roster.channelIDs,
                        addresses: [address], loop: loop, window: window)
        }
        lastSeqs = Array(repeating: 0, count: roster.channelIDs.count)
        acksChecked = Array(repeating: 0, count: roster.userIDs.count)
    }

    private func onLoop<T>(_ body: () -> T) -> T {
        loop.queue.sync(execute: body)
    }

    private func deadline(after seconds: Double) -> UInt64 {
        MonotonicClock.now() + MonotonicClock.nanoseconds(seconds)
    }

    /// Polls `condition` on the loop until it holds. Throws when `deadline` passes, when the
    /// gateway died without being killed, or when a sender got a reply it cannot use.
    private func wait(_ what: String, deadline: UInt64, until condition: () -> Bool) throws(LoadTestError) {
        while !onLoop(condition) {
            if let death = gateway.unexpectedExit {
                throw LoadTestError("the gateway \(death) while \(what); log: \(gateway.logPath)")
            }
            if let problem = onLoop({ senders.lazy.flatMap(\.problems).first }) {
                throw LoadTestError("\(what): \(problem)")
            }
            guard MonotonicClock.now() < deadline else {
                let failure = onLoop { senders.lazy.compactMap(\.lastConnectFailure).first }
                throw LoadTestError("\(what): not done in time\(failure.map { " (last connect failure: \($0))" } ?? "")")
            }
            usleep(5_000)
        }
    }

    /// Summed over senders.
    var counters: ChaosCounters {
        onLoop { senders.reduce(ChaosCounters()) { $0 + $1.counters } }
    }

    /// Sends issued and not acknowledged yet, over all senders.
    var unresolved: Int {
        onLoop { senders.reduce(0) { $0 + $1.unresolved } }
    }

    /// Every `ok` any sender got.
    var acks: [ChaosAck] {
        onLoop { senders.flatMap(\.acks) }
    }

    // MARK: phases

    /// Connects every sender, then reads each channel's last seq (the first cycle's start, and after each restart).
    func reconnect(deadline: UInt64) throws(LoadTestError) {
        try wait("connecting the senders", deadline: deadline) {
            for sender in senders where sender.needsConnection { sender.connect() }
            return senders.allSatisfy(\.isOpen)
        }
        onLoop { senders[0].requestLastSeqs() }
        try wait("reading each channel's last seq", deadline: deadline) { senders[0].lastSeqs.count == channelCount }
        lastSeqs = onLoop { (0..<channelCount).map { senders[0].lastSeqs[$0] ?? 0 } }
    }

    private func begin(_ mode: ChaosSender.Mode) {
        let marks = lastSeqs
        onLoop {
            for sender in senders {
                sender.storedBefore = marks
                sender.mode = mode
                sender.pump()
            }
        }
    }

    /// One cycle: send for `sendSeconds`, kill -9 with sends in flight, restart, reconnect.
    func cycle(sendSeconds: Double) throws(LoadTestError) -> Cycle {
        let before = counters
        begin(.everything)
        MonotonicClock.sleep(until: deadline(after: sendSeconds))
        if let death = gateway.unexpectedExit { throw LoadTestError("the gateway \(death) under load; log: \(gateway.logPath)") }

        gateway.killHard()
        let killedAt = MonotonicClock.now()
        let limit = deadline(after: cycleTimeout)
        try wait("the senders noticing the kill", deadline: limit) { senders.allSatisfy(\.needsConnection) }
        onLoop { for sender in senders { sender.mode = .paused } }
        let sent = counters
        let restart = try gateway.start(timeout: max(0.1, Double(limit &- MonotonicClock.now()) / 1e9))
        restartSeconds.append(restart)
        try reconnect(deadline: limit)
        let lost = checkAcksSurvived()
        return Cycle(sendSeconds: sendSeconds, counters: sent - before, restartSeconds: restart,
                     backSeconds: Double(MonotonicClock.now() - killedAt) / 1e9, lastSeqs: lastSeqs, lostAtRestart: lost)
    }

    /// Counts the acks since the last check whose seq lies above their channel's last seq
    /// now: the gateway said `ok`, and after the restart the channel does not reach that far.
    private func checkAcksSurvived() -> Int {
        let marks = lastSeqs
        let lost = onLoop {
            var lost = 0
            for sender in senders {
                let acks = sender.acks
                for ack in acks[acksChecked[sender.index]...] where ack.seq > marks[ack.channelIndex] { lost += 1 }
                acksChecked[sender.index] = acks.count
            }
            return lost
        }
        lostAtRestart += lost
        return lost
    }

    /// After the last restart: sends only the retries, until every send issued has its `ok`.
    func settleRetries() throws(LoadTestError) {
        begin(.retriesOnly)
        try wait("settling the last retries", deadline: deadline(after: cycleTimeout)) {
            senders.allSatisfy { $0.unresolved == 0 }
        }
    }

    /// Every channel's whole history, read forward page by page (`next` cursors) on one connection.
    func readHistories(timeout: Double) throws(LoadTestError) -> [[ChaosWire.StoredMessage]] {
        onLoop { senders[0].readHistories() }
        try wait("reading the histories", deadline: deadline(after: timeout)) {
            senders[0].historiesDone.count == channelCount
        }
        return onLoop { senders[0].histories }
    }

    /// Closes every connection normally (1000).
    func closeAll() {
        onLoop { for sender in senders { sender.close() } }
    }
}
