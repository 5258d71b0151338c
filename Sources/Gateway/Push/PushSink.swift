import ChatCore

/// Where push events (§9) and flags (§16) go, each one JSON object. `emit` never blocks
/// the caller.
protocol PushSink: Sendable {
    func emit(records: [[UInt8]])
    /// Waits until queued events are written (shutdown, tests).
    func flush()
}

extension PushSink {
    func emit(_ events: [PushEvent]) {
        emit(records: events.map(\.json))
    }
}

struct NoPushSink: PushSink {
    func emit(records: [[UInt8]]) {}
    func flush() {}
}
