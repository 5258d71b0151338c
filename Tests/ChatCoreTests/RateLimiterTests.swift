import Testing
@testable import ChatCore

/// PROTOCOL.md §6 limiters on an injected clock: nothing sleeps.
struct RateLimiterTests {
    /// `#expect` cannot call a mutating method itself.
    private func take<K>(_ bucket: inout TokenBucketLimiter<K>, _ key: K, now: Int64) -> TokenBucketLimiter<K>.Decision {
        bucket.take(key, now: now)
    }

    private func admit<K>(_ window: inout SlidingWindowLimiter<K>, _ key: K, now: Int64) -> Bool {
        window.admit(key, now: now)
    }

    // MARK: TokenBucketLimiter

    @Test("burst: 5 admitted at once, the 6th limited with the time to the next token")
    func burst() {
        var bucket = TokenBucketLimiter<String>(ratePerSecond: 5, burst: 5)
        let clock = ManualClock(0)
        for _ in 0..<5 { #expect(take(&bucket, "a", now: clock.now()) == .admitted) }
        #expect(take(&bucket, "a", now: clock.now()) == .limited(retryAfterMs: 200))
        #expect(bucket.tokens("a", now: clock.now()) == 0)
    }

    @Test("refill: one token per 1/rate, whole and fractional, capped at the burst")
    func refill() {
        var bucket = TokenBucketLimiter<String>(ratePerSecond: 5, burst: 5)
        let clock = ManualClock(1_000)
        for _ in 0..<5 { _ = bucket.take("a", now: clock.now()) }
        clock.advance(by: 130)
        #expect(take(&bucket, "a", now: clock.now()) == .limited(retryAfterMs: 70), "fractional refill shortens the wait")
        clock.advance(by: 70)
        #expect(take(&bucket, "a", now: clock.now()) == .admitted)
        #expect(take(&bucket, "a", now: clock.now()) == .limited(retryAfterMs: 200))
        clock.advance(by: 450)  // 2.25 tokens
        #expect(bucket.tokens("a", now: clock.now()) == 2)
        #expect(take(&bucket, "a", now: clock.now()) == .admitted)
        #expect(take(&bucket, "a", now: clock.now()) == .admitted)
        #expect(take(&bucket, "a", now: clock.now()) == .limited(retryAfterMs: 150))
        clock.advance(by: 3_600_000)
        #expect(bucket.tokens("a", now: clock.now()) == 5, "never more than the burst")
        for _ in 0..<5 { #expect(take(&bucket, "a", now: clock.now()) == .admitted) }
        #expect(take(&bucket, "a", now: clock.now()) != .admitted)
    }

    @Test("retryAfterMs is honest: waiting exactly that long admits, one ms less does not", arguments: [1, 3, 5, 7, 30])
    func honestRetry(rate: Int) {
        var bucket = TokenBucketLimiter<String>(ratePerSecond: rate, burst: 2)
        let clock = ManualClock(0)
        _ = bucket.take("a", now: clock.now())
        _ = bucket.take("a", now: clock.now())
        clock.advance(by: 1)
        guard case .limited(let wait) = bucket.take("a", now: clock.now()) else {
            Issue.record("expected a limit")
            return
        }
        #expect(wait > 0)
        var probe = bucket
        clock.advance(by: wait - 1)
        #expect(take(&probe, "a", now: clock.now()) != .admitted)
        clock.advance(by: 1)
        #expect(take(&bucket, "a", now: clock.now()) == .admitted)
    }

    @Test("a burst other than the rate: 1/s with burst 3")
    func burstDiffersFromRate() {
        var bucket = TokenBucketLimiter<String>(ratePerSecond: 1, burst: 3)
        for _ in 0..<3 { #expect(take(&bucket, "a", now: 0) == .admitted) }
        #expect(take(&bucket, "a", now: 0) == .limited(retryAfterMs: 1000))
        #expect(take(&bucket, "a", now: 999) == .limited(retryAfterMs: 1))
        #expect(take(&bucket, "a", now: 1000) == .admitted)
    }

    @Test("many users: each has its own bucket, and full buckets are forgotten")
    func manyUsers() {
        var bucket = TokenBucketLimiter<Int>(ratePerSecond: 5, burst: 5)
        for user in 0..<10_000 {
            for _ in 0..<5 { #expect(take(&bucket, user, now: 0) == .admitted) }
            #expect(take(&bucket, user, now: 0) == .limited(retryAfterMs: 200))
        }
        #expect(bucket.trackedKeys == 10_000)
        // A second later every bucket is full again; as new users arrive the full ones are forgotten.
        for user in 10_000..<20_000 { _ = bucket.take(user, now: 1_000) }
        #expect(bucket.trackedKeys <= 10_000, "\(bucket.trackedKeys) remembered")
        #expect(bucket.tokens(5, now: 1_000) == 5)
        for _ in 0..<5 { #expect(take(&bucket, 5, now: 1_000) == .admitted) }
    }

    // MARK: SlidingWindowLimiter

    @Test("open channel: at most N in any one-second window, per channel")
    func slidingWindow() {
        var window = SlidingWindowLimiter<String>(limit: 5)
        var admitted: [Int64] = []
        for time in stride(from: Int64(0), to: 3_000, by: 50) where window.admit("c", now: time) {
            admitted.append(time)
        }
        #expect(admitted == [0, 50, 100, 150, 200, 1000, 1050, 1100, 1150, 1200, 2000, 2050, 2100, 2150, 2200])
        for (index, time) in admitted.enumerated() {
            let inWindow = admitted[index...].prefix { $0 < time + 1000 }
            #expect(inWindow.count <= 5)
        }
        #expect(admit(&window, "other", now: 2_250), "channels are throttled separately")
    }

    @Test("sliding window: a slot frees exactly one window after it was used")
    func slidingWindowEdges() {
        var window = SlidingWindowLimiter<String>(limit: 2)
        #expect(admit(&window, "c", now: 0))
        #expect(admit(&window, "c", now: 400))
        #expect(!admit(&window, "c", now: 999))
        #expect(admit(&window, "c", now: 1000))
        #expect(!admit(&window, "c", now: 1399))
        #expect(admit(&window, "c", now: 1400))
        window.forget("c")
        #expect(admit(&window, "c", now: 1401))
        #expect(admit(&window, "c", now: 1401))
        #expect(!admit(&window, "c", now: 1401))
    }
}
