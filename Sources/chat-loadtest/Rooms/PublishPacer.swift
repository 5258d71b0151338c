import Dispatch
import EventLoop

/// Open-loop sending for the publishers of one loop: each publisher sends at
/// `ratePerPublisher`, shifted by its phase so sends spread evenly. A message is stamped with
/// the time it was *due*, not the time it went out, so a stalled tool shows up as latency (no
/// coordinated omission).
///
/// The publishers are walked in the order their messages fall due (by phase, round after
/// round), on a timer of `tick`: a message goes out at most a tick after it was due, and a
/// tick costs only the messages due in it. (A 1 ms timer that looked at every publisher put
/// up to a millisecond of the tool's own waiting, half of it at the median, into every
/// delivery's latency.)
final class PublishPacer {
    static let tick: DispatchTimeInterval = .microseconds(100)

    private let schedule: PublishSchedule
    private let publishers: [MemberConnection]
    /// Each publisher's next sequence when the pacer started: a ramp step continues the numbering.
    private let firstSequences: [Int]
    /// Indices into `publishers`, by the time their messages fall due within a round.
    private let order: [Int]
    /// The next message due: the round, and the position in `order`.
    private var round = 0
    private var position = 0
    private var timer: DispatchSourceTimer?

    init(loop: EventLoop, publishers: [MemberConnection], schedule: PublishSchedule) {
        self.schedule = schedule
        self.publishers = publishers
        firstSequences = publishers.map { $0.publisher?.nextSequence ?? 0 }
        // Message n (from 0) of a publisher is due (n + 1 - phase) / rate after the start.
        order = publishers.indices.sorted { (publishers[$0].publisher?.phase ?? 0) > (publishers[$1].publisher?.phase ?? 0) }
        let timer = DispatchSource.makeTimerSource(flags: .strict, queue: loop.queue)
        let delay = schedule.start > MonotonicClock.now() ? schedule.start - MonotonicClock.now() : 0
        timer.schedule(deadline: .now() + .nanoseconds(Int(delay)), repeating: Self.tick, leeway: .microseconds(20))
        timer.setEventHandler { [unowned self] in tick() }
        timer.resume()
        self.timer = timer
    }

    deinit { timer?.cancel() }

    private func tick() {
        let now = min(MonotonicClock.now(), schedule.sendEnd)
        guard now >= schedule.start, !order.isEmpty else { return }
        let rate = schedule.ratePerPublisher
        let elapsed = Double(now - schedule.start) / 1e9
        while true {
            let index = order[position]
            let member = publishers[index]
            let phase = member.publisher?.phase ?? 0
            guard Double(round + 1) - phase <= elapsed * rate else { break }
            if let publisher = member.publisher {
                // Through this round's message (and any a closed spell left behind).
                let due = firstSequences[index] + round + 1
                while member.isOpen && publisher.nextSequence < due {
                    let offset = (Double(publisher.nextSequence - firstSequences[index] + 1) - publisher.phase) / rate
                    member.sendMessage(stamp: schedule.start + UInt64(max(0, offset) * 1e9))
                }
            }
            position += 1
            if position == order.count {
                position = 0
                round += 1
            }
        }
        if now >= schedule.sendEnd { stop() }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}
