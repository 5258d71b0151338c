/// Judges whether a connection's peer is too slow to keep, from what the kernel refused.
///
/// Bytes queued during one loop turn and written by the next flush are not slowness, however
/// many: a fast reader that asked for a large history page, or pipelines large messages,
/// must not be cut off. What counts is output the socket refused: a connection is slow when,
/// after every flush for `windowTicks` sweeps in a row, more than `maxUnsentBytes` stayed
/// unsent; or at once, when the socket is pushing back and the queue passes
/// `hardLimitBytes` (so memory stays bounded whatever the window).
///
/// Sans-IO: the connection reports flushes, queued bytes and sweeps; this answers whether
/// the peer is now judged slow. It says so once.
public struct OutputBound: Sendable {
    public var maxUnsentBytes: Int
    public var windowTicks: UInt64
    /// Four times `maxUnsentBytes`: what a pushing-back socket may hold before the window ends.
    public var hardLimitBytes: Int {
        let (product, overflow) = maxUnsentBytes.multipliedReportingOverflow(by: 4)
        return overflow ? Int.max : product
    }

    /// The sweep tick at which the unsent output first stayed above the bound after a flush.
    private var overSinceTick: UInt64?
    private(set) public var isExceeded = false

    public init(maxUnsentBytes: Int = 4 * 1024 * 1024, windowTicks: UInt64 = 3) {
        self.maxUnsentBytes = maxUnsentBytes
        self.windowTicks = max(1, windowTicks)
    }

    /// No bound: nothing is ever judged slow (client connections of tools and tests).
    public static let unbounded = OutputBound(maxUnsentBytes: Int.max, windowTicks: UInt64.max)

    /// A flush ended with `unsent` bytes left because the socket would block.
    public mutating func kernelRefused(unsent: Int, tick: UInt64) {
        if unsent > maxUnsentBytes {
            if overSinceTick == nil { overSinceTick = tick }
        } else {
            overSinceTick = nil
        }
    }

    /// A flush wrote everything.
    public mutating func drained() {
        overSinceTick = nil
    }

    /// Bytes were queued; `pushingBack` says the socket refused output at its last flush.
    /// True when this makes the peer slow.
    public mutating func queued(unsent: Int, pushingBack: Bool) -> Bool {
        guard !isExceeded, pushingBack, unsent > hardLimitBytes else { return false }
        isExceeded = true
        return true
    }

    /// The once-a-second sweep. True when the unsent output has now stayed above the bound
    /// for the whole window.
    public mutating func sweep(tick: UInt64) -> Bool {
        guard !isExceeded, let since = overSinceTick, tick >= since, tick - since >= windowTicks else { return false }
        isExceeded = true
        return true
    }
}
