/// Events this node committed but could not put on the bus (its publish connection was
/// down, or a PUBLISH failed) while the other nodes may well have stayed subscribed:
/// published again, in their order, as soon as the connection is back, so the other nodes
/// apply a block, a membership change or a message late rather than never (messages they
/// already have are dropped by their `seq`; the other writes are idempotent). Bounded: past
/// `capacity` the oldest are dropped and counted (the nodes then hold them only from the
/// database, at their next start).
struct BusOutbox {
    static let capacity = 100_000

    private var payloads: [[UInt8]] = []
    private var head = 0
    private(set) var dropped = 0

    var count: Int { payloads.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ payload: [UInt8]) {
        if count >= Self.capacity {
            head += 1
            dropped += 1
        }
        payloads.append(payload)
        compactIfWasteful()
    }

    /// Everything waiting, oldest first; the outbox is empty after.
    mutating func takeAll() -> [[UInt8]] {
        defer {
            payloads.removeAll(keepingCapacity: false)
            head = 0
        }
        return Array(payloads[head...])
    }

    /// Payloads taken and not published after all go back in front, in their order.
    mutating func putBack(_ failed: [[UInt8]]) {
        guard !failed.isEmpty else { return }
        payloads = failed + payloads[head...]
        head = 0
        while count > Self.capacity {
            head += 1
            dropped += 1
        }
    }

    private mutating func compactIfWasteful() {
        if head > 1_024 && head * 2 > payloads.count {
            payloads.removeFirst(head)
            head = 0
        }
    }
}
