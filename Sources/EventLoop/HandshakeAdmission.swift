/// How many of a loop's new connections work through their opening handshake (TLS, the
/// HTTP upgrade) at once; the others wait their turn, in order, their bytes unprocessed.
/// A connection arrives here once its opening is ready (`HandshakeOpening`: a complete TLS
/// record or HTTP request head), not when it is accepted, so a connection that sends
/// nothing usable never holds a turn that a ready one is waiting for.
///
/// Started all at once, a burst of handshakes shares the core evenly: each progresses at
/// the pace of all of them, so none finishes before the slowest and, past the handshake
/// timeout, all fail together and their clients retry. Taken a bounded number at a time,
/// the first arrivals finish at full speed and the rest follow in order.
///
/// Sans-IO: the caller starts what `arrive` and `release` hand back.
public struct HandshakeAdmission<Waiter> {
    /// Handshakes in progress at once; 0 starts every arrival at once.
    public var limit: Int
    /// Arrivals holding a turn (started and not yet released).
    public private(set) var inProgress = 0
    private var waiting: [Waiter] = []
    private var head = 0

    public init(limit: Int = 0) {
        self.limit = limit
    }

    /// Arrivals waiting for a turn (including ones that left meanwhile: see `release`).
    public var waitingCount: Int { waiting.count - head }

    /// A connection whose opening is ready: true when it starts now (it holds a turn until released), false
    /// when it waits behind the others.
    public mutating func arrive(_ waiter: Waiter) -> Bool {
        if waitingCount == 0 && hasFreeTurn {
            inProgress += 1
            return true
        }
        waiting.append(waiter)
        return false
    }

    /// A turn ends: the waiter to start next, which now holds a turn. A waiter that left
    /// while it waited is released again by the caller, passing the turn on.
    public mutating func release() -> Waiter? {
        inProgress = max(inProgress - 1, 0)
        guard hasFreeTurn, head < waiting.count else { return nil }
        let next = waiting[head]
        head += 1
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count <= 1024)
            head = 0
        } else if head >= 1024 && head * 2 >= waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        inProgress += 1
        return next
    }

    private var hasFreeTurn: Bool { limit <= 0 || inProgress < limit }
}
