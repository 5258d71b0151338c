/// The live line on standard error, once a second, and the timeline it leaves for `--report`.
final class ProgressLine {
    private let members: Int
    private var start: UInt64 = 0
    private var measureStart: UInt64 = 0
    private var last = LoopCounters()
    private var lastTime: UInt64 = 0
    private(set) var timeline: [TimelineSample] = []

    init(members: Int) {
        self.members = members
    }

    /// Starts counting seconds at `time`; timeline seconds count from `measureStart`.
    func reset(at time: UInt64, measureStart: UInt64? = nil) {
        start = time
        lastTime = time
        self.measureStart = measureStart ?? time
        last = LoopCounters()
    }

    func printConnecting(_ c: LoopCounters) {
        Console.error("chat-loadtest: connected \(c.connected)/\(members), failed \(c.connectFailed)")
    }

    /// Prints the line for the second that just ended; `recent` holds the latencies of its deliveries.
    func print(_ phase: String, _ c: LoopCounters, recent: LatencyHistogram, at time: UInt64) {
        let seconds = Double(time - lastTime) / 1e9
        let sentRate = seconds > 0 ? Double(c.sent - last.sent) / seconds : 0
        let deliveryRate = seconds > 0 ? Double(c.deliveries - last.deliveries) / seconds : 0
        var line = "[\(Format.fixed(Double(time - start) / 1e9, 0))s \(phase)] sent \(Format.grouped(c.sent))"
        line += " (\(Format.grouped(Int(sentRate)))/s) acked \(Format.grouped(c.acked)) in flight \(c.inFlight)"
        line += " deliveries \(Format.grouped(c.deliveries)) (\(Format.grouped(Int(deliveryRate)))/s)"
        if recent.count > 0 { line += " p99 \(Format.fixed(recent.milliseconds(atPercentile: 99), 1)) ms" }
        if c.errors > 0 { line += " errors \(c.errors)" }
        if c.duplicates > 0 { line += " duplicates \(c.duplicates)" }
        if c.disconnected > 0 { line += " disconnected \(c.disconnected)" }
        Console.error(line)
        timeline.append(TimelineSample(
            second: (Double(time) - Double(measureStart)) / 1e9, phase: phase, sentPerSecond: sentRate,
            deliveriesPerSecond: deliveryRate, latencyP50Ms: recent.milliseconds(atPercentile: 50),
            latencyP99Ms: recent.milliseconds(atPercentile: 99), latencyMaxMs: recent.maxMilliseconds))
        last = c
        lastTime = time
    }
}
