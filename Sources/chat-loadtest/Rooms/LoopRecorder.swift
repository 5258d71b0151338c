import Dispatch
import EventLoop
import WebSocket

/// Everything one event loop measures: counters, latency histograms and the
/// per-message delivery counts. Touched only on its loop (hence `@unchecked
/// Sendable`); the coordinator reads it with `loop.queue.sync`.
final class LoopRecorder: @unchecked Sendable {
    let loop: EventLoop
    let plan: RunPlan
    var members: [MemberConnection] = []
    private(set) var schedule = PublishSchedule.notStarted
    var counters = LoopCounters()
    /// End to end: `message.new` received − the stamp in its text, for messages stamped in the window.
    var latency = LatencyHistogram()
    /// End to end for every delivery since the progress line last took it (the per-second timeline).
    var recentLatency = LatencyHistogram()
    /// connect() → the 101 checked, per connection.
    var handshakeLatency = LatencyHistogram()
    /// `message.send` → its `ok`, for sends in the window.
    var ackLatency = LatencyHistogram()
    var deliveryCounts: DeliveryCounts
    /// With --deflate every member of a loop receives the same compressed frames: inflated once.
    let inflateMemo = InflateMemo(capacity: 8192)
    /// Failed upgrades by reason (HTTP status or transport error).
    var connectFailures: [String: Int] = [:]
    /// Close codes of connections the gateway closed.
    var closeReasons: [String: Int] = [:]
    /// The first few error replies, verbatim.
    var errorSamples: [String] = []
    private var pacer: PublishPacer?
    /// `--read-and-type`: every member also sends `typing.start` once a second and
    /// `channel.markRead` for each message it receives.
    var readAndType = false
    private var typingTicker: TypingTicker?
    /// `--lifecycle`: what members do once a second besides the run's messages.
    var lifecycle: LifecycleMix?
    private var lifecycleTicker: TypingTicker?

    init(loop: EventLoop, plan: RunPlan) {
        self.loop = loop
        self.plan = plan
        deliveryCounts = DeliveryCounts(publishers: plan.publishers)
    }

    var publishers: [MemberConnection] { members.filter { $0.publisher != nil } }

    /// Starts the publishers of this loop (call on the loop).
    func begin(_ schedule: PublishSchedule) {
        self.schedule = schedule
        if readAndType {
            typingTicker?.stop()
            typingTicker = TypingTicker(loop: loop, members: members, schedule: schedule) { $0.sendTyping() }
        }
        if let lifecycle {
            lifecycleTicker?.stop()
            lifecycleTicker = TypingTicker(loop: loop, members: members, schedule: schedule) { $0.sendLifecycle(lifecycle) }
        }
        let publishers = self.publishers
        guard !publishers.isEmpty else { return }
        if schedule.isSaturating {
            let delay = schedule.start > MonotonicClock.now() ? schedule.start - MonotonicClock.now() : 0
            loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) {
                for member in publishers {
                    for _ in 0..<schedule.window { member.sendMessage(stamp: MonotonicClock.now()) }
                }
            }
        } else {
            pacer = PublishPacer(loop: loop, publishers: publishers, schedule: schedule)
        }
    }

    /// Forgets what the last measured window saw, before a ramp step (call on the loop).
    func resetWindow() {
        latency = LatencyHistogram()
        ackLatency = LatencyHistogram()
        counters.sentInWindow = 0
        counters.ackedInWindow = 0
        counters.deliveriesInWindow = 0
    }

    @inline(__always)
    func recordDelivery(publisher: Int, sequence: Int, stamp: UInt64, receivedAt now: UInt64) {
        counters.deliveries += 1
        deliveryCounts.add(publisher: publisher, sequence: sequence)
        if schedule.inWindow(now) { counters.deliveriesInWindow += 1 }
        let elapsed = now &- min(stamp, now)
        recentLatency.record(nanoseconds: elapsed)
        if schedule.inWindow(stamp) { latency.record(nanoseconds: elapsed) }
    }

    func recordReply(sentAt: UInt64, receivedAt now: UInt64, ok: Bool, payload: [UInt8]) {
        counters.inFlight -= 1
        if ok {
            counters.acked += 1
            if schedule.inWindow(sentAt) {
                counters.ackedInWindow += 1
                ackLatency.record(nanoseconds: now &- min(sentAt, now))
            }
        } else {
            counters.errors += 1
            if errorSamples.count < 5 { errorSamples.append(String(decoding: payload.prefix(300), as: UTF8.self)) }
        }
    }

    func recordSend(stamp: UInt64) {
        counters.sent += 1
        counters.inFlight += 1
        if schedule.inWindow(stamp) { counters.sentInWindow += 1 }
    }

    func recordConnectFailure(_ reason: String) {
        counters.connectFailed += 1
        connectFailures[reason, default: 0] += 1
    }

    func recordClose(_ reason: String) {
        closeReasons[reason, default: 0] += 1
    }

    /// Closes every connection with a normal close frame (call on the loop).
    func closeAll() {
        pacer?.stop()
        typingTicker?.stop()
        for member in members { member.close() }
    }
}
