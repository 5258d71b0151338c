import Testing
@testable import ChatClient

/// `ChannelFeed`: what the app gets of one channel is every visible message once, in seq
/// order, whatever order live messages, sends' answers and history pages come in.
@Suite("Channel feed")
struct ChannelFeedTests {
    private static func message(_ seq: Int64) -> Message {
        Message(id: "m\(seq)", channelId: "c", seq: seq, senderId: "b", text: "t\(seq)", data: nil, clientMessageId: nil,
                createdAt: seq)
    }

    @Test func inOrderMessagesGoStraightThroughAndRepeatsAreDropped() {
        var feed = ChannelFeed(afterSeq: 0)
        var out: [Message] = []
        #expect(feed.received(Self.message(1), deliver: &out) == nil)
        #expect(feed.received(Self.message(2), deliver: &out) == nil)
        #expect(feed.received(Self.message(1), deliver: &out) == nil)
        #expect(out.map(\.seq) == [1, 2])
    }

    @Test func aGapIsSettledByHistoryAndWhatHistoryLeavesOutIsHidden() {
        var feed = ChannelFeed(afterSeq: 2)
        var out: [Message] = []
        #expect(feed.received(Self.message(6), deliver: &out) == .readHistory(afterSeq: 2))
        #expect(feed.received(Self.message(7), deliver: &out) == nil, "held while history is read")
        #expect(out.isEmpty)
        // Seq 4 is hidden from this user: history returns 3 and 5 (and the held 6).
        #expect(feed.historyRead([Self.message(3), Self.message(5), Self.message(6)], more: false, deliver: &out) == nil)
        #expect(out.map(\.seq) == [3, 5, 6, 7])
        #expect(feed.lastSeq == 7)
    }

    @Test func aCatchUpPagesUntilHistoryHasNoMoreAndTheLiveTailFollows() {
        var feed = ChannelFeed(afterSeq: 0)
        var out: [Message] = []
        #expect(feed.catchUp() == .readHistory(afterSeq: 0))
        #expect(feed.catchUp() == nil, "one read at a time")
        _ = feed.received(Self.message(5), deliver: &out)
        #expect(feed.historyRead([1, 2].map(Self.message), more: true, deliver: &out) == .readHistory(afterSeq: 2))
        #expect(feed.historyRead([3, 4, 5].map(Self.message), more: false, deliver: &out) == nil)
        #expect(out.map(\.seq) == [1, 2, 3, 4, 5])
        // A failed read is started again by the next catch-up.
        #expect(feed.catchUp() == .readHistory(afterSeq: 5))
        feed.historyFailed()
        #expect(feed.catchUp() == .readHistory(afterSeq: 5))
    }
}
