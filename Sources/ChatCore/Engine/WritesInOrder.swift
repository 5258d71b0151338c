/// Writes of one kind in flight, in the order they were enqueued: the store settles them
/// in that order, so the next one to settle is the oldest, found without hashing.
struct WritesInOrder<Value: Sendable>: Sendable {
    private var ids: [WriteID] = []
    private var values: [Value?] = []
    private var head = 0

    var count: Int { ids.count - head }

    mutating func append(_ id: WriteID, _ value: Value) {
        ids.append(id)
        values.append(value)
    }

    /// The value of write `id` if it is one of these, removed. Writes settle in order, so it
    /// is the oldest; one that settles out of order is still found (ids only grow, so a
    /// binary search), and an id of another kind costs two comparisons.
    mutating func settle(_ id: WriteID) -> Value? {
        guard head < ids.count, id >= ids[head], let last = ids.last, id <= last else { return nil }
        var index = head
        if ids[head] != id {
            var low = head
            var high = ids.count - 1
            while low < high {
                let middle = (low + high) / 2
                if ids[middle] < id { low = middle + 1 } else { high = middle }
            }
            guard ids[low] == id, values[low] != nil else { return nil }
            index = low
        }
        // Moved out, not copied: a value is a whole send (its text and ids).
        let value = values[index].take()
        if index == head {
            head += 1
            while head < ids.count, values[head] == nil { head += 1 }
            compact()
        }
        return value
    }

    private mutating func compact() {
        if head == ids.count {
            ids.removeAll(keepingCapacity: true)
            values.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024, head * 2 >= ids.count {
            ids.removeFirst(head)
            values.removeFirst(head)
            head = 0
        }
    }
}
