import ChatCore
import Testing

@Suite("Request budget")
struct RequestBudgetTests {
    @Test("burst at once, then the rate, with an exact retryAfterMs")
    func rate() {
        var budget = RequestBudget(ratePerSecond: 10, burst: 3, maxInFlight: 100)
        for _ in 0..<3 { let r1 = budget.admit(now: 1000); #expect(r1 == .admitted) }
        let r2 = budget.admit(now: 1000)
        #expect(r2 == .limited(retryAfterMs: 100))
        let r3 = budget.admit(now: 1099)
        #expect(r3 == .limited(retryAfterMs: 1))
        let r4 = budget.admit(now: 1100)
        #expect(r4 == .admitted)
        let r5 = budget.admit(now: 1100)
        #expect(r5 == .limited(retryAfterMs: 100))
        // A long pause refills the burst, no more.
        for _ in 0..<3 { let r6 = budget.admit(now: 60_000); #expect(r6 == .admitted) }
        let r7 = budget.admit(now: 60_000)
        #expect(r7 != .admitted)
    }

    @Test("at most maxInFlight unanswered; each answer frees one")
    func inFlight() {
        var budget = RequestBudget(ratePerSecond: 0, burst: 1, maxInFlight: 2)
        let r8 = budget.admit(now: 0)
        #expect(r8 == .admitted)
        let r9 = budget.admit(now: 0)
        #expect(r9 == .admitted)
        let r10 = budget.admit(now: 0)
        #expect(r10 == .tooManyInFlight)
        budget.answered()
        #expect(budget.inFlight == 1)
        let r11 = budget.admit(now: 0)
        #expect(r11 == .admitted)
        budget.answered()
        budget.answered()
        budget.answered()
        #expect(budget.inFlight == 0, "never below zero")
    }

    @Test("rate 0 is no rate limit; a refused request is not in flight")
    func rateOff() {
        var budget = RequestBudget(ratePerSecond: 0, burst: 1, maxInFlight: 1_000_000)
        for _ in 0..<10_000 { let r12 = budget.admit(now: 5); #expect(r12 == .admitted) }
        var limited = RequestBudget(ratePerSecond: 1, burst: 1, maxInFlight: 5)
        let r13 = limited.admit(now: 0)
        #expect(r13 == .admitted)
        let r14 = limited.admit(now: 0)
        #expect(r14 != .admitted)
        #expect(limited.inFlight == 1)
    }
}
