import Dispatch
import EventLoop

/// Open-loop sending for the publishers of one loop: a ~1 ms timer sends
/// whatever is due at `ratePerPublisher`, each publisher shifted by its phase so
/// sends spread evenly. A message is stamped with the time it was *due*, not the
/// time it went out, so a stalled tool shows up as latency (no coordinated omission).
final class PublishPacer {
    private let schedule: PublishSchedule
    private let publishers: [MemberConnection]
    /// Each publisher's next sequence when the pacer started: a ramp step continues the numbering.
    private let firstSequences: [Int]
    private var timer: DispatchSourceTimer?

    init(loop: EventLoop, publishers: [MemberConnection], schedule: PublishSchedule) {
        self.schedule = schedule
        self.publishers = publishers
        firstSequences = publishers.map { $0.publisher?.nextSequence ?? 0 }
        let timer = DispatchSource.makeTimerSource(flags: .strict, queue: loop.queue)
        let delay = schedule.start > MonotonicClock.now() ? schedule.start - MonotonicClock.now() : 0
        timer.schedule(deadline: .now() + .nanoseconds(Int(delay)), repeating: .milliseconds(1), leeway: .microseconds(200))
        timer.setEventHandler { [unowned self] in tick() }
        timer.resume()
        self.timer = timer
    }

    deinit { timer?.cancel() }

    private func tick() {
        let now = min(MonotonicClock.now(), schedule.sendEnd)
        guard now >= schedule.start else { return }
        let rate = schedule.ratePerPublisher
        let elapsed = Double(now - schedule.start) / 1e9
        for (member, first) in zip(publishers, firstSequences) {
            guard let publisher = member.publisher else { continue }
            let due = first + Int(elapsed * rate + publisher.phase)
            while member.isOpen && publisher.nextSequence < due {
                let offset = (Double(publisher.nextSequence - first + 1) - publisher.phase) / rate
                member.sendMessage(stamp: schedule.start + UInt64(max(0, offset) * 1e9))
            }
        }
        if now >= schedule.sendEnd { stop() }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}
