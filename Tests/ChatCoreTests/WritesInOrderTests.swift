import Testing
@testable import ChatCore

/// `WritesInOrder`: writes of one kind found again when they settle, in order or not.
@Suite("Writes in order")
struct WritesInOrderTests {
    @Test("in order, out of order, unknown ids, and a long run that compacts")
    func settles() {
        var writes = WritesInOrder<String>()
        writes.append(3, "a")
        writes.append(5, "b")
        writes.append(9, "c")
        #expect(writes.settle(4) == nil, "an id of another kind")
        #expect(writes.settle(5) == "b", "out of order")
        #expect(writes.settle(5) == nil, "settled twice")
        #expect(writes.settle(3) == "a")
        #expect(writes.count == 1)
        #expect(writes.settle(9) == "c")
        #expect(writes.count == 0 && writes.settle(9) == nil)
        var long = WritesInOrder<Int>()
        for id in 0..<5000 { long.append(WriteID(id * 2), id) }
        var settled: [Int] = []
        for id in 0..<5000 { if let value = long.settle(WriteID(id * 2)) { settled.append(value) } }
        #expect(settled == Array(0..<5000))
        #expect(long.count == 0)
    }
}
