import Dispatch
import EventLoop

/// `--read-and-type` and `--lifecycle`: every member of one loop does `action` once a second
/// while the run sends (`typing.start`, a reaction…), spread over ten 100 ms ticks (member
/// `i` on tick `i % 10`).
final class TypingTicker {
    private var timer: DispatchSourceTimer?
    private var tick = 0

    init(loop: EventLoop, members: [MemberConnection], schedule: PublishSchedule, action: @escaping (MemberConnection) -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: loop.queue)
        let delay = schedule.start > MonotonicClock.now() ? schedule.start - MonotonicClock.now() : 0
        timer.schedule(deadline: .now() + .nanoseconds(Int(delay)), repeating: .milliseconds(100), leeway: .milliseconds(5))
        timer.setEventHandler { [unowned self] in
            guard MonotonicClock.now() < schedule.sendEnd else {
                stop()
                return
            }
            let slot = tick % 10
            tick += 1
            for member in members where member.index % 10 == slot { action(member) }
        }
        timer.resume()
        self.timer = timer
    }

    deinit { timer?.cancel() }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}
