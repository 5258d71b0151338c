import Testing
@testable import ChatCore

/// `ReadStates`: unread = messages after the mark minus the member's own and hidden ones,
/// kept as ranges of seqs.
@Suite("Read states")
struct ReadStatesTests {
    @Test func ownAndHiddenMessagesAfterTheMarkDoNotCount() {
        var reads = ReadStates()
        reads.joined("a", channel: "c", newestSeq: 0)
        reads.joined("b", channel: "c", newestSeq: 0)
        for seq: Int64 in 1...10 {
            // a sends 1–3 and 7; 5 is hidden from a.
            let uncounted: [UserID] = seq <= 3 || seq == 7 ? ["a"] : seq == 5 ? ["b", "a"] : ["b"]
            reads.uncounted(seq, channel: "c", for: uncounted)
        }
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 10) == 5)  // 4, 6, 8, 9, 10
        let moved2 = reads.markRead("a", channel: "c", seq: 2)
        #expect(moved2)
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 10) == 5)
        let moved6 = reads.markRead("a", channel: "c", seq: 6)
        #expect(moved6)
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 10) == 3)
        let moved5 = reads.markRead("a", channel: "c", seq: 5)
        #expect(!moved5, "never back")
        #expect(reads.lastReadSeq(of: "a", in: "c") == 6)
        #expect(reads.unreadCount(of: "b", in: "c", newestSeq: 10) == 4)  // 1, 2, 3, 7
        #expect(reads.unreadCount(of: "x", in: "c", newestSeq: 10) == 0, "not a member")
    }

    @Test func aJoinerStartsAtTheNewestSeqAndARejoinerKeepsItsMark() {
        var reads = ReadStates()
        reads.joined("a", channel: "c", newestSeq: 7)
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: 9) == 2)
        reads.joined("a", channel: "c", newestSeq: 9)
        #expect(reads.lastReadSeq(of: "a", in: "c") == 7)
    }

    @Test func interleavedOwnMessagesBeyondTheRangeLimitStayExactUntilAMarkLandsAmongThem() {
        var reads = ReadStates()
        reads.joined("a", channel: "c", newestSeq: 0)
        let total = Int64(ReadStates.maxRanges) * 4
        for seq in 1...total {
            reads.uncounted(seq, channel: "c", for: seq % 2 == 1 ? ["a"] : ["b"])
        }
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: total) == total / 2)
        reads.markRead("a", channel: "c", seq: total - 10)
        #expect(reads.unreadCount(of: "a", in: "c", newestSeq: total) == 5)
    }
}

/// `ReadEventPacing`: the first change at once, then one per interval carrying the newest
/// mark; the interval grows with the channel.
@Suite("Read event pacing")
struct ReadEventPacingTests {
    @Test func firstAtOnceThenOncePerIntervalGrowingWithTheChannel() {
        #expect(ReadEventPacing.interval(members: 2) == 1_000)
        #expect(ReadEventPacing.interval(members: 1_000) == 10_000)
        #expect(ReadEventPacing.interval(members: 100_000) == 30_000)
        var pacing = ReadEventPacing()
        let key = ReadEventPacing.Key(channel: "c", user: "a")
        #expect(pacing.moved(key, members: 2, now: 0) == .send)
        #expect(pacing.moved(key, members: 2, now: 300) == .later(afterMilliseconds: 700))
        #expect(pacing.moved(key, members: 2, now: 600) == .waiting)
        let due = pacing.due(key, now: 1_000)
        let dueAgain = pacing.due(key, now: 1_001)
        #expect(due)
        #expect(!dueAgain, "one event per held-back run")
        #expect(pacing.moved(key, members: 2, now: 2_500) == .send)
        let room = ReadEventPacing.Key(channel: "room", user: "a")
        #expect(pacing.moved(room, members: 1_000, now: 0) == .send)
        #expect(pacing.moved(room, members: 1_000, now: 5_000) == .later(afterMilliseconds: 5_000))
    }
}
