import EventLoop
import Testing

/// `OutputBound` judges what the kernel refused over a window, never a burst queued for one flush.
@Suite("Output bound")
struct OutputBoundTests {
    @Test("a burst far over the bound, written by the next flush, is not slowness")
    func burstIsNotSlow() {
        var bound = OutputBound(maxUnsentBytes: 1000, windowTicks: 2)
        let r1 = bound.queued(unsent: 50_000, pushingBack: false)
        #expect(!r1)
        bound.drained()
        for tick: UInt64 in 1...10 { let r2 = bound.sweep(tick: tick); #expect(!r2) }
        #expect(!bound.isExceeded)
    }

    @Test("refused output above the bound at every flush for the whole window is slow, once")
    func refusedForTheWindow() {
        var bound = OutputBound(maxUnsentBytes: 1000, windowTicks: 2)
        bound.kernelRefused(unsent: 1500, tick: 5)
        let r3 = bound.sweep(tick: 5)
        #expect(!r3)
        bound.kernelRefused(unsent: 1800, tick: 6)
        let r4 = bound.sweep(tick: 6)
        #expect(!r4)
        let r5 = bound.sweep(tick: 7)
        #expect(r5)
        #expect(bound.isExceeded)
        let r6 = bound.sweep(tick: 8)
        #expect(!r6, "said once")
    }

    @Test("a reader that catches up within the window is kept: refused below the bound or drained resets it")
    func catchingUpResets() {
        var bound = OutputBound(maxUnsentBytes: 1000, windowTicks: 2)
        bound.kernelRefused(unsent: 5000, tick: 1)
        bound.kernelRefused(unsent: 900, tick: 2)
        let r7 = bound.sweep(tick: 3)
        #expect(!r7)
        bound.kernelRefused(unsent: 5000, tick: 3)
        bound.drained()
        let r8 = bound.sweep(tick: 9)
        #expect(!r8)
        bound.kernelRefused(unsent: 5000, tick: 10)
        let r9 = bound.sweep(tick: 11)
        #expect(!r9)
        let r10 = bound.sweep(tick: 12)
        #expect(r10)
    }

    @Test("past four times the bound while the socket pushes back: slow at once")
    func hardLimit() {
        var bound = OutputBound(maxUnsentBytes: 1000, windowTicks: 30)
        #expect(bound.hardLimitBytes == 4000)
        let r11 = bound.queued(unsent: 4001, pushingBack: false)
        #expect(!r11, "not while the kernel takes everything")
        let r12 = bound.queued(unsent: 4000, pushingBack: true)
        #expect(!r12)
        let r13 = bound.queued(unsent: 4001, pushingBack: true)
        #expect(r13)
        let r14 = bound.queued(unsent: 9000, pushingBack: true)
        #expect(!r14, "said once")
    }

    @Test("unbounded never judges, and a huge bound does not overflow")
    func unbounded() {
        var bound = OutputBound.unbounded
        bound.kernelRefused(unsent: Int.max / 2, tick: 0)
        let r15 = bound.sweep(tick: UInt64.max)
        #expect(!r15)
        let r16 = bound.queued(unsent: Int.max / 2, pushingBack: true)
        #expect(!r16)
        #expect(OutputBound(maxUnsentBytes: Int.max, windowTicks: 1).hardLimitBytes == Int.max)
    }
}
