/// Distinct deliveries per (publisher, sequence), summed over connections:
/// compared with the expected M − 1 per acknowledged message, it gives loss.
struct DeliveryCounts: Sendable {
    private(set) var counts: [[UInt32]]

    init(publishers: Int) {
        counts = Array(repeating: [], count: publishers)
    }

    @inline(__always)
    mutating func add(publisher: Int, sequence: Int) {
        if sequence >= counts[publisher].count {
            let count = max(sequence + 1, counts[publisher].count * 2, 64)
            counts[publisher].append(contentsOf: repeatElement(0, count: count - counts[publisher].count))
        }
        counts[publisher][sequence] &+= 1
    }

    func count(publisher: Int, sequence: Int) -> Int {
        sequence < counts[publisher].count ? Int(counts[publisher][sequence]) : 0
    }

    mutating func merge(_ other: DeliveryCounts) {
        for publisher in other.counts.indices {
            for (sequence, count) in other.counts[publisher].enumerated() where count > 0 {
                if sequence >= counts[publisher].count {
                    counts[publisher].append(contentsOf: repeatElement(0, count: sequence + 1 - counts[publisher].count))
                }
                counts[publisher][sequence] &+= count
            }
        }
    }
}
