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
