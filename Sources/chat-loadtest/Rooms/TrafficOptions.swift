import ArgumentParser

/// How a run sends and for how long: shared by `room` and `rooms`.
struct TrafficOptions: ParsableArguments {
    @Option(help: "Total messages per second over all publishers, open loop; 0 saturates.")
    var rate: Double = 0

    @Option(name: .customLong("user-rate"), help: "The gateway's limits.userMessagesPerSecond, to check --rate against.")
    var userRate: Double = 5

    @Option(help: "Seconds measured (after the warm-up).")
    var duration: Double = 10

    @Option(help: "Seconds of sending before the measured window.")
    var warmup: Double = 2

    @Option(help: "Bytes of each message text (at least the stamp).")
    var size = 64

    @Option(help: "Seconds to wait after provisioning before connecting (lets the gateway settle after bulk writes).")
    var settle: Double = 0

    @Option(name: .customLong("connect-rate"), help: "New connections per second.")
    var connectRate: Double = 2000

    @Option(help: "Unacknowledged sends per publisher when --rate is 0.")
    var window = 32

    @Flag(name: .customLong("write-each-frame"),
          help: "Write every frame with its own system call when it is sent, as a browser's WebSocket does, instead of gathering a connection's frames of one loop turn into one write.")
    var writeEachFrame = false

    @Option(help: "Seconds to wait after the window for outstanding replies and deliveries.")
    var drain: Double = 5

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for every upgrade.")
    var connectTimeout: Double = 60

    @Option(name: .customLong("user-prefix"), help: "Prefix of the user ids the run creates.")
    var userPrefix = "lt"

    @Option(help: "Also write a self-contained HTML page (summary, throughput and latency over time) to this file.")
    var report: String?

    func validate() throws {
        guard rate >= 0, duration > 0, warmup >= 0, drain >= 0, settle >= 0 else {
            throw ValidationError("--rate, --warmup, --drain and --settle must be ≥ 0, --duration > 0")
        }
        guard (1...5000).contains(size) else { throw ValidationError("--size must be 1…5000 (maxTextLength)") }
        guard userRate > 0 else { throw ValidationError("--user-rate must be positive") }
        guard window >= 1, connectRate > 0 else {
            throw ValidationError("--window and --connect-rate must be positive")
        }
    }

    /// Publishers needed so that none exceeds --user-rate at --rate.
    var publishersForRate: Int { max(1, Int((rate / userRate).rounded(.up))) }
}
