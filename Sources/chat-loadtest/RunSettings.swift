/// The knobs of a `room` run, validated by `RoomCommand`.
struct RunSettings: Sendable {
    var members: Int
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
}
