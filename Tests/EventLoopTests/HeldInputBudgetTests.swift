import Testing
@testable import EventLoop

struct HeldInputBudgetTests {
    @Test func reservationsStopAtTheLimitAndReleasesGiveRoomBack() {
        var budget = HeldInputBudget(limit: 100)
        let first = budget.reserve(60), over = budget.reserve(41)
        #expect(first && !over)
        #expect(budget.held == 60, "a refused reservation takes nothing")
        let rest = budget.reserve(40)
        #expect(rest)
        budget.release(60)
        #expect(budget.held == 40)
        let again = budget.reserve(60)
        #expect(again)
    }

    @Test func noLimitHoldsAnythingAndNothingGoesBelowZero() {
        var budget = HeldInputBudget()
        let huge = budget.reserve(Int.max / 2)
        #expect(huge)
        budget.release(Int.max)
        #expect(budget.held == 0)
        let negative = budget.reserve(-1)
        #expect(!negative, "a negative reservation is refused")
        var bounded = HeldInputBudget(limit: 10)
        let overflow = bounded.reserve(Int.max)
        #expect(!overflow, "no overflow past the limit")
    }
}
