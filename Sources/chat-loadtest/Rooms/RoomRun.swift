import Dispatch
import EventLoop

/// A `room` run once the room exists: connects every member at `connectRate`,
/// publishes through warm-up and the measured window, drains, and collects.
/// The coordinating thread only paces, sleeps and reads the loops' recorders
/// with `queue.sync`; everything else happens on the loops.
final class RoomRun {
    let settings: RunSettings
    let plan: RunPlan
    let tokens: [String]
    let recorders: [LoopRecorder]
    private let progress: ProgressLine

    init(settings: RunSettings, plan: RunPlan, tokens: [String], group: EventLoopGroup) {
        self.settings = settings
        self.plan = plan
        self.tokens = tokens
        recorders = group.loops.map { LoopRecorder(loop: $0, plan: plan) }
        for recorder in recorders {
            recorder.readAndType = settings.readAndType
            recorder.lifecycle = settings.lifecycle
        }
        progress = ProgressLine(members: settings.members)
    }

    func run() -> RunOutcome {
        var outcome = RunOutcome()
        let cpuStart = CPUTime.now()
        connectAll(&outcome)
        publish(rate: settings.rate, warmup: settings.warmup, duration: settings.duration, into: &outcome, cpuStart: cpuStart)
        collect(into: &outcome)
        outcome.cpuTotal = CPUTime.now() - cpuStart
        closeAll()
        outcome.timeline = progress.timeline
        return outcome
    }

    /// The ramp: open-loop steps of `stepSeconds` on the same connections, the rate
    /// multiplied by `factor` each step, until a step's p99 passes `boundMs`, a step
    /// loses, errs or does not drain, or the rate passes `maximum`.
    func runRamp(from first: Double, factor: Double, maximum: Double, stepSeconds: Double, boundMs: Double) -> [RampStep] {
        var connecting = RunOutcome()
        connectAll(&connecting)
        var steps: [RampStep] = []
        var rate = first
        while rate <= maximum {
            var step = RunOutcome()
            for recorder in recorders { recorder.loop.queue.sync { recorder.resetWindow() } }
            publish(rate: rate, warmup: 1, duration: stepSeconds, into: &step, cpuStart: CPUTime.now())
            var settled = RunOutcome()
            collect(into: &settled)
            let counters = settled.counters
            let result = RampStep(
                rate: rate, deliveriesPerSecond: Double(counters.deliveriesInWindow) / step.windowSeconds,
                latency: settled.latency, lostSoFar: settled.lostDeliveries, errors: counters.errors,
                drained: step.drainComplete)
            steps.append(result)
            Console.error("chat-loadtest: ramp \(Format.fixed(rate, 0)) msgs/s: \(result.summary(boundMs: boundMs))")
            if !result.passes(boundMs: boundMs) { break }
            rate *= factor
        }
        closeAll()
        return steps
    }

    /// Sends for `warmup` + `duration` seconds at `rate` (0 saturates), then waits for the
    /// replies and deliveries still under way, printing the progress line each second.
    private func publish(rate: Double, warmup: Double, duration: Double, into outcome: inout RunOutcome, cpuStart: CPUTime) {
        let start = MonotonicClock.now() + 100_000_000
        let warmupEnd = start + MonotonicClock.nanoseconds(warmup)
        let schedule = PublishSchedule(
            start: start, warmupEnd: warmupEnd, sendEnd: warmupEnd + MonotonicClock.nanoseconds(duration),
            ratePerPublisher: rate / Double(settings.publishers), window: settings.window)
        for recorder in recorders { recorder.loop.execute { recorder.begin(schedule) } }
        outcome.windowSeconds = schedule.windowSeconds

        var cpuAtWarmupEnd: CPUTime?
        var nextLine = start + 1_000_000_000
        progress.reset(at: start, measureStart: warmupEnd)
        while true {
            let wake = min(nextLine, cpuAtWarmupEnd == nil ? warmupEnd : schedule.sendEnd, schedule.sendEnd)
            MonotonicClock.sleep(until: wake)
            let now = MonotonicClock.now()
            if cpuAtWarmupEnd == nil && now >= warmupEnd { cpuAtWarmupEnd = CPUTime.now() }
            if now >= schedule.sendEnd {
                outcome.cpuWindow = CPUTime.now() - (cpuAtWarmupEnd ?? cpuStart)
                break
            }
            if now >= nextLine {
                printProgress(now < warmupEnd ? "warm-up" : "measure", at: now)
                nextLine += 1_000_000_000
            }
        }

        let drainStart = MonotonicClock.now()
        let drainDeadline = drainStart + MonotonicClock.nanoseconds(settings.drain)
        nextLine = drainStart + 1_000_000_000
        while true {
            let c = totals()
            let expected = c.acked * RunOutcome.expectedPerMessage(groupSize: plan.groupSize, connected: c.connected)
            if c.inFlight <= 0 && c.deliveries >= expected {
                outcome.drainComplete = true
                break
            }
            let now = MonotonicClock.now()
            if now >= drainDeadline { break }
            if now >= nextLine {
                printProgress("drain", at: now)
                nextLine += 1_000_000_000
            }
            MonotonicClock.sleep(until: min(now + 50_000_000, drainDeadline))
        }
        outcome.drainSeconds = Double(MonotonicClock.now() - drainStart) / 1e9
    }

    // MARK: phases

    private func connectAll(_ outcome: inout RunOutcome) {
        let start = MonotonicClock.now()
        progress.reset(at: start)
        let interval = 1e9 / max(1, settings.connectRate)
        var nextLine = start + 1_000_000_000
        for index in 0..<settings.members {
            MonotonicClock.sleep(until: start + UInt64(Double(index) * interval))
            let recorder = recorders[index % recorders.count]
            let publisher = index < settings.publishers
                ? PublisherState(index: index, publishers: settings.publishers, channelID: plan.channelID(of: index),
                                 textSize: plan.textSize)
                : nil
            let member = MemberConnection(index: index, token: tokens[index], recorder: recorder, publisher: publisher)
            recorder.loop.execute {
                recorder.members.append(member)
                member.start()
            }
            if MonotonicClock.now() >= nextLine {
                progress.printConnecting(totals())
                nextLine += 1_000_000_000
            }
        }
        let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(settings.connectTimeout)
        while true {
            let c = totals()
            let now = MonotonicClock.now()
            if c.connected + c.connectFailed >= settings.members || now >= deadline {
                outcome.connectTimedOut = settings.members - c.connected - c.connectFailed
                break
            }
            if now >= nextLine {
                progress.printConnecting(c)
                nextLine += 1_000_000_000
            }
            MonotonicClock.sleep(until: now + 10_000_000)
        }
        outcome.connectSeconds = Double(MonotonicClock.now() - start) / 1e9
        progress.printConnecting(totals())
    }

    /// The `idle` scenario: connects everyone, holds the connections without a
    /// message for `hold` seconds, calls `atEnd` while they are still open, closes them.
    func runIdle(hold: Double, atEnd: () -> Void) -> RunOutcome {
        var outcome = RunOutcome()
        let cpuStart = CPUTime.now()
        connectAll(&outcome)
        let holdStart = MonotonicClock.now()
        MonotonicClock.sleep(until: holdStart + MonotonicClock.nanoseconds(hold))
        outcome.cpuWindow = CPUTime.now() - cpuStart
        atEnd()
        collect(into: &outcome)
        closeAll()
        outcome.cpuTotal = CPUTime.now() - cpuStart
        return outcome
    }

    private func printProgress(_ phase: String, at now: UInt64) {
        var counters = LoopCounters()
        var recent = LatencyHistogram()
        for recorder in recorders {
            recorder.loop.queue.sync {
                counters.add(recorder.counters)
                recent.merge(recorder.recentLatency)
                recorder.recentLatency = LatencyHistogram()
            }
        }
        progress.print(phase, counters, recent: recent, at: now)
    }

    private func totals() -> LoopCounters {
        var sum = LoopCounters()
        for recorder in recorders { sum.add(recorder.loop.queue.sync { recorder.counters }) }
        return sum
    }

    private func collect(into outcome: inout RunOutcome) {
        var counts = DeliveryCounts(publishers: plan.publishers)
        var tallies: [PublisherTally] = []
        for recorder in recorders {
            recorder.loop.queue.sync {
                outcome.counters.add(recorder.counters)
                outcome.latency.merge(recorder.latency)
                outcome.ackLatency.merge(recorder.ackLatency)
                outcome.handshakeLatency.merge(recorder.handshakeLatency)
                counts.merge(recorder.deliveryCounts)
                outcome.connectFailures.merge(recorder.connectFailures, uniquingKeysWith: +)
                outcome.closeReasons.merge(recorder.closeReasons, uniquingKeysWith: +)
                outcome.errorSamples += recorder.errorSamples
                for member in recorder.publishers {
                    guard let publisher = member.publisher else { continue }
                    tallies.append(PublisherTally(publisher: publisher.index, sent: publisher.nextSequence, ackedBits: publisher.acked))
                }
            }
        }
        if outcome.connectTimedOut > 0 { outcome.connectFailures["no answer before --connect-timeout"] = outcome.connectTimedOut }
        outcome.settleDeliveries(counts: counts, acked: tallies, groupSize: plan.groupSize)
    }

    private func closeAll() {
        for recorder in recorders { recorder.loop.queue.sync { recorder.closeAll() } }
        MonotonicClock.sleep(until: MonotonicClock.now() + 300_000_000)
    }
}
