import ChatCore

/// Where push events go. `emit` never blocks the caller.
protocol PushSink: Sendable {
    func emit(_ events: [PushEvent])
    /// Waits until queued events are written (shutdown, tests).
    func flush()
}

struct NoPushSink: PushSink {
    func emit(_ events: [PushEvent]) {}
    func flush() {}
}
