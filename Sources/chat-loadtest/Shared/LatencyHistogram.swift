import Histogram

/// Latencies in microseconds (1 µs … 60 s, three significant digits).
struct LatencyHistogram: Sendable {
    private(set) var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)

    @inline(__always)
    mutating func record(nanoseconds: UInt64) {
        let micros = nanoseconds / 1000
        histogram.record(min(micros, histogram.highestTrackableValue))
    }

    mutating func merge(_ other: LatencyHistogram) {
        histogram.add(other.histogram)
    }

    var count: UInt64 { histogram.totalCount }

    /// The value at `percentile` (0–100) in milliseconds.
    func milliseconds(atPercentile percentile: Double) -> Double {
        count == 0 ? 0 : Double(histogram.valueAtPercentile(percentile)) / 1000
    }

    var maxMilliseconds: Double { count == 0 ? 0 : Double(histogram.max) / 1000 }
    var meanMilliseconds: Double { count == 0 ? 0 : histogram.mean / 1000 }
}
