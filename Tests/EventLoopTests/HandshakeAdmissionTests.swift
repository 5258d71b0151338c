import EventLoop
import Testing

/// `HandshakeAdmission` starts at most `limit` arrivals at once and the rest in arrival order.
@Suite("Handshake admission")
struct HandshakeAdmissionTests {
    @Test("up to the limit start at once; the rest wait and start in arrival order as turns end")
    func startsInOrder() {
        var admission = HandshakeAdmission<Int>(limit: 2)
        var started: [Bool] = []
        for arrival in 1...5 { started.append(admission.arrive(arrival)) }
        #expect(started == [true, true, false, false, false])
        #expect(admission.inProgress == 2 && admission.waitingCount == 3)
        var next: [Int?] = []
        for _ in 0..<4 { next.append(admission.release()) }
        #expect(next == [3, 4, 5, nil])
        #expect(admission.inProgress == 1 && admission.waitingCount == 0)
    }

    @Test("a new arrival does not overtake those waiting, even when a turn is free")
    func noOvertaking() {
        var admission = HandshakeAdmission<Int>(limit: 1)
        let first = admission.arrive(1)
        let second = admission.arrive(2)
        #expect(first && !second)
        // 2 gets the turn; a caller that finds it gone releases it again, passing the turn on.
        let handedOver = admission.release()
        #expect(handedOver == 2)
        let third = admission.arrive(3)
        #expect(!third, "3 waits behind the turn 2 holds")
        let afterSecond = admission.release()
        let afterThird = admission.release()
        #expect(afterSecond == 3 && afterThird == nil)
        #expect(admission.inProgress == 0)
        let fourth = admission.arrive(4)
        #expect(fourth)
    }

    @Test("limit 0 starts everyone; releasing more than started never goes negative")
    func unbounded() {
        var admission = HandshakeAdmission<Int>()
        var all = true
        for arrival in 0..<10_000 { all = admission.arrive(arrival) && all }
        #expect(all)
        #expect(admission.inProgress == 10_000)
        var handed = 0
        for _ in 0..<10_001 where admission.release() != nil { handed += 1 }
        #expect(handed == 0)
        #expect(admission.inProgress == 0)
    }

    @Test("a long queue keeps its order while it is compacted")
    func longQueue() {
        var admission = HandshakeAdmission<Int>(limit: 1)
        _ = admission.arrive(-1)
        var waited = 0
        for arrival in 0..<5000 where !admission.arrive(arrival) { waited += 1 }
        #expect(waited == 5000)
        var order: [Int] = []
        while let next = admission.release() {
            order.append(next)
            if next % 7 == 0 { _ = admission.arrive(10_000 + next) }
        }
        let expected = Array(0..<5000) + (0..<5000).filter { $0 % 7 == 0 }.map { 10_000 + $0 }
        #expect(order == expected)
    }
}
