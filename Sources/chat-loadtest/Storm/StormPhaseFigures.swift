/// What one storm phase measured: who finished and how, its wall time, and the CPU the
/// gateway (from /proc, with `--gateway-pid`) and the tool spent over it.
struct StormPhaseFigures: Sendable {
    var name: String
    var total = 0
    var succeeded = 0
    var failed = 0
    var seconds = 0.0
    var resumed = 0
    var retries = 0
    var rateLimited = 0
    var pages = 0
    var gatewayCPUSeconds: Double?
    var toolCPUSeconds = 0.0
    var failures: [String: Int] = [:]

    init(name: String) {
        self.name = name
    }

    init(_ phase: StormPhase, gatewayCPUSeconds: Double?, toolCPUSeconds: Double) {
        name = phase.name
        total = phase.total
        succeeded = phase.succeeded.load(ordering: .relaxed)
        failed = phase.failed.load(ordering: .relaxed)
        // Participants that never finished (deadline) count as failed.
        failed += max(0, total - succeeded - failed)
        seconds = phase.seconds
        resumed = phase.resumed.load(ordering: .relaxed)
        retries = phase.retries.load(ordering: .relaxed)
        rateLimited = phase.rateLimited.load(ordering: .relaxed)
        pages = phase.pages.load(ordering: .relaxed)
        self.gatewayCPUSeconds = gatewayCPUSeconds
        self.toolCPUSeconds = toolCPUSeconds
        failures = phase.failureReasons
    }

    /// Gateway CPU milliseconds per participant that succeeded (per handshake + upgrade in
    /// the connect phases).
    var gatewayMillisecondsEach: Double? {
        guard let gatewayCPUSeconds, succeeded > 0 else { return nil }
        return gatewayCPUSeconds * 1000 / Double(succeeded)
    }

    var toolMillisecondsEach: Double? {
        succeeded > 0 ? toolCPUSeconds * 1000 / Double(succeeded) : nil
    }
}
