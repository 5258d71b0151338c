import Dispatch
import EventLoop
import Synchronization
import Testing

@Suite struct BatchingQueueTests {
    @Test func workFromManyThreadsRunsOnTheQueueInEachPostersOrder() {
        let queue = DispatchQueue(label: "test.batching")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let batching = BatchingQueue(queue: queue)
        let seen = Mutex<[[Int]]>(Array(repeating: [], count: 4))
        let offQueue = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { poster in
            for index in 0..<2_000 {
                batching.async {
                    if DispatchQueue.getSpecific(key: key) != true { offQueue.wrappingAdd(1, ordering: .relaxed) }
                    seen.withLock { $0[poster].append(index) }
                }
            }
        }
        queue.sync {}
        #expect(offQueue.load(ordering: .relaxed) == 0)
        seen.withLock { lists in
            for list in lists { #expect(list == Array(0..<2_000)) }
        }
    }

    /// Work posted while a burst runs goes in the next burst, queued where a plain
    /// `async` would have been: before what the queue is given directly afterwards.
    @Test func workPostedFromABurstRunsAfterIt() {
        let queue = DispatchQueue(label: "test.batching")
        let batching = BatchingQueue(queue: queue)
        let order = Mutex<[String]>([])
        queue.suspend()
        batching.async {
            order.withLock { $0.append("a") }
            batching.async { order.withLock { $0.append("c") } }
            queue.async { order.withLock { $0.append("direct") } }
        }
        batching.async { order.withLock { $0.append("b") } }
        queue.resume()
        queue.sync {}
        queue.sync {}
        #expect(order.withLock { $0 } == ["a", "b", "c", "direct"])
    }
}
