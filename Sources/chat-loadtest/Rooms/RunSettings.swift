/// The knobs of a `room` or `rooms` run, validated by its command.
struct RunSettings: Sendable {
    var scenario: String
    var members: Int
    var channels: Int
    var publishers: Int
    /// Total messages per second over all publishers; 0 = saturate.
    var rate: Double
    var duration: Double
    var warmup: Double
    var textSize: Int
    var blockEach: Int
    var window: Int
    var drain: Double
    var connectRate: Double
    var connectTimeout: Double
    var loops: Int
    /// `room --read-and-type`: members also send `typing.start` at 1/s and `channel.markRead` per message.
    var readAndType = false
    /// `room --lifecycle`: members also react, edit and reply once a second (§15).
    var lifecycle: LifecycleMix?
    /// `--write-each-frame`: one system call per frame, at once.
    var writesEachFrame = false
}

extension RunSettings {
    init(traffic: TrafficOptions, scenario: String, members: Int, channels: Int, publishers: Int, blockEach: Int, loops: Int) {
        self.init(scenario: scenario, members: members, channels: channels, publishers: publishers, rate: traffic.rate,
                  duration: traffic.duration, warmup: traffic.warmup, textSize: traffic.size, blockEach: blockEach,
                  window: traffic.window, drain: traffic.drain, connectRate: traffic.connectRate,
                  connectTimeout: traffic.connectTimeout, loops: loops)
        writesEachFrame = traffic.writeEachFrame
    }
}
