import Testing
@testable import ChatClient

/// `ChannelFeed`: what the app gets of one channel is every visible message once as `.new`, in
/// seq order, and every later state of one once as `.updated`, whatever order live events,
/// answers and read pages come in.
@Suite("Channel feed")
struct ChannelFeedTests {
    private static func message(_ seq: Int64, version: Int64 = 0, text: String? = nil) -> Message {
        Message(id: "m\(seq)", channelId: "c", seq: seq, senderId: "b", text: text ?? "t\(seq)", data: nil,
                clientMessageId: nil, createdAt: seq, version: version)
    }

    private static func edited(_ seq: Int64, version: Int64, text: String) -> Message {
        var message = message(seq, version: version, text: text)
        message.editedAt = 1000 + version
        return message
    }

    private static func reaction(_ seq: Int64, counts: [String: Int64], by user: String = "b", added: Bool = true) -> ReactionUpdate {
        ReactionUpdate(channelId: "c", seq: seq, userId: user, kind: "👍", reactions: counts, added: added)
    }

    /// `.new` seqs and `.updated` (seq, version) pairs, in the order handed out.
    private static func summary(_ items: [MessageFeedItem]) -> [String] {
        items.map { item in
            switch item {
            case .new(let message): return "new \(message.seq)"
            case .updated(let message): return "updated \(message.seq)@\(message.version)"
            case .reactions(let update): return "reactions \(update.seq) \(update.reactions)"
            }
        }
    }

    // MARK: new messages (as before v1.2: no versions, history reads)

    @Test func inOrderMessagesGoStraightThroughAndRepeatsAreDropped() {
        var feed = ChannelFeed(afterSeq: 0)
        var out: [MessageFeedItem] = []
        #expect(feed.received(Self.message(1), deliver: &out) == nil)
        #expect(feed.received(Self.message(2), deliver: &out) == nil)
        #expect(feed.received(Self.message(1), deliver: &out) == nil)
        #expect(Self.summary(out) == ["new 1", "new 2"])
    }

    @Test func aGapIsSettledByHistoryAndWhatHistoryLeavesOutIsHidden() {
        var feed = ChannelFeed(afterSeq: 2)
        var out: [MessageFeedItem] = []
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
        var out: [MessageFeedItem] = []
        #expect(feed.catchUp() == .readHistory(afterSeq: 0))
        #expect(feed.catchUp() == nil, "one read at a time")
        _ = feed.received(Self.message(5), deliver: &out)
        #expect(feed.historyRead([1, 2].map { Self.message($0) }, more: true, deliver: &out) == .readHistory(afterSeq: 2))
        #expect(feed.historyRead([3, 4, 5].map { Self.message($0) }, more: false, deliver: &out) == nil)
        #expect(out.map(\.seq) == [1, 2, 3, 4, 5])
        // A failed read is started again by the next catch-up.
        #expect(feed.catchUp() == .readHistory(afterSeq: 5))
        feed.readFailed()
        #expect(feed.catchUp() == .readHistory(afterSeq: 5))
    }

    // MARK: changes (v1.2)

    @Test func aReconnectCatchesUpWithChangesAfterTheLastVersionSeenLive() {
        var feed = ChannelFeed(afterSeq: 0, version: 0)
        var out: [MessageFeedItem] = []
        _ = feed.received(Self.message(1, version: 1), deliver: &out)
        _ = feed.received(Self.message(2, version: 2), deliver: &out)
        _ = feed.updated(Self.edited(1, version: 3, text: "fixed"), deliver: &out)
        #expect(feed.version == 2, "a second change may share version 3 (a reply and its parent)")
        // Offline: 2 was deleted (4), 3 was sent (5), 1 was edited again (6).
        #expect(feed.catchUp() == .readChanges(afterVersion: 2))
        var tombstone = Self.message(2, version: 4, text: "")
        tombstone.deletedAt = 99
        let page = ChangesPage(messages: [tombstone, Self.message(3, version: 5), Self.edited(1, version: 6, text: "again")],
                               version: 6, next: nil)
        #expect(feed.changesRead(page, deliver: &out) == nil)
        #expect(Self.summary(out) == ["new 1", "new 2", "updated 1@3", "updated 2@4", "updated 1@6", "new 3"])
        #expect(out.compactMap(\.message).last(where: { $0.seq == 2 })?.isDeleted == true)
        #expect(feed.version == 6)
        #expect(!feed.reading)
    }

    @Test func aReplyAndItsParentShareAVersionAndBothGoOut() {
        var feed = ChannelFeed(afterSeq: 2, version: 2)
        var out: [MessageFeedItem] = []
        var reply = Self.message(3, version: 3)
        reply.parentSeq = 1
        var parent = Self.message(1, version: 3)
        parent.replyCount = 1
        _ = feed.received(reply, deliver: &out)
        _ = feed.updated(parent, deliver: &out)
        #expect(Self.summary(out) == ["new 3", "updated 1@3"])
        #expect(feed.catchUp() == .readChanges(afterVersion: 2), "a drop between the two reads both again")
    }

    @Test func aChangeThatArrivesLiveAndInARead() {
        var feed = ChannelFeed(afterSeq: 2, version: 10)
        var out: [MessageFeedItem] = []
        #expect(feed.catchUp() == .readChanges(afterVersion: 10))
        // Live during the read: an edit at 11, then the read's page has it too.
        #expect(feed.updated(Self.edited(1, version: 11, text: "x"), deliver: &out) == nil)
        #expect(feed.changesRead(ChangesPage(messages: [Self.edited(1, version: 11, text: "x")], version: 11, next: nil),
                                 deliver: &out) == nil)
        #expect(Self.summary(out) == ["updated 1@11"], "once")
        // The event of an own edit after its answer, and an older state after a newer one: dropped.
        _ = feed.updated(Self.edited(2, version: 13, text: "mine"), live: false, deliver: &out)
        _ = feed.updated(Self.edited(2, version: 13, text: "mine"), deliver: &out)
        _ = feed.updated(Self.edited(2, version: 12, text: "older"), deliver: &out)
        #expect(Self.summary(out) == ["updated 1@11", "updated 2@13"])
        #expect(feed.version == 12)
    }

    @Test func aReadStateOlderThanALiveOneIsNotHandedOut() {
        var feed = ChannelFeed(afterSeq: 1, version: 5)
        var out: [MessageFeedItem] = []
        _ = feed.catchUp()
        // The live edit at 8 is newer than what the read saw (6).
        _ = feed.updated(Self.edited(1, version: 8, text: "newest"), deliver: &out)
        _ = feed.changesRead(ChangesPage(messages: [Self.edited(1, version: 6, text: "older")], version: 6, next: nil),
                             deliver: &out)
        #expect(Self.summary(out) == ["updated 1@8"])
        #expect(feed.version == 7, "the live event during the read counts once the read is done")
    }

    @Test func newMessagesFromChangesGoOutInSeqOrderOnceEveryPageIsRead() {
        var feed = ChannelFeed(afterSeq: 1, version: 1)
        var out: [MessageFeedItem] = []
        #expect(feed.catchUp() == .readChanges(afterVersion: 1))
        // Seq 2 was sent (2) and edited (5): in version order it comes after 3 and 4.
        let first = ChangesPage(messages: [Self.message(3, version: 3), Self.message(4, version: 4)], version: 6, next: 4)
        #expect(feed.changesRead(first, deliver: &out) == .readChanges(afterVersion: 4))
        #expect(out.isEmpty, "held until every page is read")
        let second = ChangesPage(messages: [Self.edited(2, version: 5, text: "e"), Self.message(5, version: 6)], version: 6, next: nil)
        #expect(feed.changesRead(second, deliver: &out) == nil)
        #expect(Self.summary(out) == ["new 2", "new 3", "new 4", "new 5"])
        #expect(out.first?.message?.text == "e", "in its latest state")
        #expect(feed.lastSeq == 5 && feed.version == 6)
    }

    @Test func anEmptyPageWithMoreAfterItReadsOnAndANextThatDoesNotMoveEndsTheRead() {
        var feed = ChannelFeed(afterSeq: 1, version: 1)
        var out: [MessageFeedItem] = []
        _ = feed.catchUp()
        // Versions 2…40 were changes hidden from this user: an empty page, more after it.
        #expect(feed.changesRead(ChangesPage(messages: [], version: 41, next: 40), deliver: &out) == .readChanges(afterVersion: 40))
        #expect(feed.changesRead(ChangesPage(messages: [Self.message(2, version: 41)], version: 41, next: 40), deliver: &out) == nil,
                "a next at or before the cursor ends the read instead of asking for the same page again")
        #expect(Self.summary(out) == ["new 2"] && !feed.reading && feed.version == 41)
    }

    @Test func aReadCutOffBetweenPagesStartsAgainAfterThePagesRead() {
        var feed = ChannelFeed(afterSeq: 0, version: 0)
        var out: [MessageFeedItem] = []
        _ = feed.catchUp()
        _ = feed.changesRead(ChangesPage(messages: [Self.message(1, version: 1), Self.message(2, version: 2)], version: 9, next: 2),
                             deliver: &out)
        feed.readFailed()
        #expect(feed.catchUp() == .readChanges(afterVersion: 2))
        _ = feed.changesRead(ChangesPage(messages: [Self.message(3, version: 9)], version: 9, next: nil), deliver: &out)
        #expect(Self.summary(out) == ["new 1", "new 2", "new 3"], "what the first read held is not lost")
    }

    @Test func liveEventsDuringAReadDoNotMoveTheCursorPastWhatWasRead() {
        var feed = ChannelFeed(afterSeq: 3, version: 3)
        var out: [MessageFeedItem] = []
        _ = feed.catchUp()
        _ = feed.changesRead(ChangesPage(messages: [Self.edited(1, version: 4, text: "a")], version: 40, next: 4), deliver: &out)
        _ = feed.updated(Self.edited(2, version: 41, text: "live"), deliver: &out)
        feed.readFailed()
        // Changes 5…40 were never read: the next read starts at 4, not at 41.
        #expect(feed.catchUp() == .readChanges(afterVersion: 4))
    }

    @Test func aGapInSeqsWithVersionsIsReadAsChanges() {
        var feed = ChannelFeed(afterSeq: 1, version: 1)
        var out: [MessageFeedItem] = []
        #expect(feed.received(Self.message(3, version: 3), deliver: &out) == .readChanges(afterVersion: 1))
        _ = feed.changesRead(ChangesPage(messages: [Self.message(3, version: 3)], version: 3, next: nil), deliver: &out)
        #expect(Self.summary(out) == ["new 3"], "seq 2 is hidden from this user")
        // An update of a message not handed out yet is a gap too: it goes out as new.
        #expect(feed.updated(Self.edited(5, version: 6, text: "e"), deliver: &out) == .readChanges(afterVersion: 3))
        _ = feed.changesRead(ChangesPage(messages: [Self.message(4, version: 4), Self.edited(5, version: 6, text: "e")],
                                         version: 6, next: nil), deliver: &out)
        #expect(Self.summary(out) == ["new 3", "new 4", "new 5"])
    }

    @Test func reactionsDuringAReadWaitForItAndReactionsOfHiddenMessagesAreDropped() {
        var feed = ChannelFeed(afterSeq: 2, version: 2)
        var out: [MessageFeedItem] = []
        #expect(feed.reacted(Self.reaction(1, counts: ["👍": 1]), deliver: &out) == nil)
        #expect(Self.summary(out) == ["reactions 1 [\"👍\": 1]"])
        _ = feed.catchUp()
        _ = feed.reacted(Self.reaction(2, counts: ["👍": 2]), deliver: &out)
        var reacted = Self.message(2, version: 3)
        reacted.reactions = ["👍": 1]
        _ = feed.changesRead(ChangesPage(messages: [reacted], version: 3, next: nil), deliver: &out)
        #expect(Self.summary(out) == ["reactions 1 [\"👍\": 1]", "updated 2@3", "reactions 2 [\"👍\": 2]"],
                "the live counts are not overtaken by the read's")
        // A reaction on a message past the last one is a gap; the read does not return it: hidden.
        #expect(feed.reacted(Self.reaction(9, counts: ["👍": 1]), deliver: &out) == .readChanges(afterVersion: 3))
        _ = feed.changesRead(ChangesPage(messages: [], version: 3, next: nil), deliver: &out)
        #expect(out.count == 3)
    }

    @Test func aGatewayWithoutChangesFallsBackToHistory() {
        var feed = ChannelFeed(afterSeq: 0, version: 0)
        var out: [MessageFeedItem] = []
        #expect(feed.catchUp() == .readChanges(afterVersion: 0))
        #expect(feed.changesUnsupported() == .readHistory(afterSeq: 0))
        _ = feed.historyRead([Self.message(1)], more: false, deliver: &out)
        #expect(feed.version == nil && !feed.reading)
        #expect(feed.catchUp() == .readHistory(afterSeq: 1))
    }

    @Test func aStartAtASeqWithoutItsVersionReadsHistoryThenTheChangesSinceTheStart() {
        // The channel was at version 20 when the app asked for the messages after seq 2.
        var feed = ChannelFeed(afterSeq: 2, version: 20, backfill: true)
        var out: [MessageFeedItem] = []
        #expect(feed.catchUp() == .readHistory(afterSeq: 2))
        #expect(feed.historyRead([Self.message(3, version: 3), Self.edited(4, version: 19, text: "e")], more: false,
                                 deliver: &out) == .readChanges(afterVersion: 20))
        #expect(feed.reading)
        _ = feed.changesRead(ChangesPage(messages: [Self.edited(1, version: 21, text: "old one"), Self.message(5, version: 22)],
                                         version: 22, next: nil), deliver: &out)
        #expect(Self.summary(out) == ["new 3", "new 4", "updated 1@21", "new 5"])
        #expect(!feed.reading && feed.version == 22)
    }
}
