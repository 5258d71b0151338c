/// When publishers send, and which part of the run is measured. Times are
/// `MonotonicClock` nanoseconds.
struct PublishSchedule: Sendable {
    /// Sending begins.
    var start: UInt64
    /// The warm-up ends and the measured window begins.
    var warmupEnd: UInt64
    /// The measured window ends; nothing is sent from here on.
    var sendEnd: UInt64
    /// Messages per second per publisher; 0 = saturate (a window of unacknowledged sends).
    var ratePerPublisher: Double
    /// Unacknowledged sends each publisher keeps in flight when saturating.
    var window: Int

    /// Before the start: nothing is in the window.
    static let notStarted = PublishSchedule(start: .max, warmupEnd: .max, sendEnd: .max, ratePerPublisher: 0, window: 0)

    var isSaturating: Bool { ratePerPublisher <= 0 }

    @inline(__always)
    func inWindow(_ time: UInt64) -> Bool { time >= warmupEnd && time < sendEnd }

    var windowSeconds: Double { Double(sendEnd - warmupEnd) / 1e9 }
}
