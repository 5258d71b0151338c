import Testing
@testable import ChatCore

/// A cluster node that stops following a channel and later follows it again installs the
/// channel's stored state anew: what it then shows every member (newest message, unread
/// count, read mark, version) equals what a node that started with that state shows, and
/// the channels it did not reload stay as they were.
@Suite struct ChannelStreamReloadTests {
    private static func message(_ seq: Int64, in channel: ChannelID, from sender: UserID, hiddenFrom: UserID? = nil) -> Message {
        var message = Message(id: "m\(channel)\(seq)", channelID: channel, seq: seq, senderID: sender, text: "t\(seq)",
                              createdAt: seq, hiddenFrom: hiddenFrom)
        message.version = seq
        return message
    }

    private static let users = ["a", "b", "c"].map { User(id: $0, createdAt: 0) }
    private static let channels = [
        Channel(id: "g", type: .group, members: ["a", "b", "c"], createdAt: 0, createdBy: "a"),
        Channel(id: "d", type: .group, members: ["a", "b"], isOneToOne: true, createdAt: 0, createdBy: "a"),
    ]

    /// The stored state of both channels after `sent` messages in "g" (every third from c,
    /// the rest from a; a read up to 2, b up to `sent - 1`) and four in "d", the last hidden
    /// from b.
    private static func stored(sent: Int64) -> ChannelStreams {
        let group = (1...sent).map { message($0, in: "g", from: $0 % 3 == 0 ? "c" : "a") }
        let direct = (1...4).map { message($0, in: "d", from: "a", hiddenFrom: $0 == 4 ? "b" : nil) }
        return ChannelStreams(
            channels: ["g", "d"], lastMessages: [group[group.count - 1], direct[3]],
            lastVisible: [(viewer: "b", message: direct[2])],
            readMarks: [ReadMark(channelID: "g", userID: "a", lastReadSeq: 2), ReadMark(channelID: "g", userID: "b", lastReadSeq: sent - 1)],
            messagesAfterMarks: group.filter { $0.seq > 2 }.map {
                MessageHeader(channelID: "g", seq: $0.seq, senderID: $0.senderID, hiddenFrom: nil)
            } + direct.map { MessageHeader(channelID: "d", seq: $0.seq, senderID: $0.senderID, hiddenFrom: $0.hiddenFrom) },
            versions: ["g": sent, "d": 4])
    }

    private static func started(with streams: ChannelStreams, mode: DeliveryPolicy.Mode) -> ChatDirectory {
        var directory = ChatDirectory()
        directory.load(users: users, channels: channels, lastMessages: streams.lastMessages, lastVisible: streams.lastVisible,
                       blocks: [(blocker: "b", blocked: "c")], readMarks: streams.readMarks,
                       messagesAfterMarks: streams.messagesAfterMarks, blockingMode: mode, versions: streams.versions)
        return directory
    }

    private struct View: Equatable {
        var last: Message?
        var read: Int64
        var unread: Int64
        var version: Int64
    }

    private static func view(_ directory: ChatDirectory, _ channel: ChannelID, _ viewer: UserID) -> View {
        let state = directory.readState(of: channel, for: viewer)
        return View(last: directory.lastMessage(of: channel, for: viewer), read: state.lastReadSeq, unread: state.unreadCount,
                    version: directory.version(of: channel))
    }

    @Test(arguments: [DeliveryPolicy.Mode.standard, .strict])
    func aReloadedChannelShowsWhatAFreshStartShows(mode: DeliveryPolicy.Mode) {
        let fresh = Self.started(with: Self.stored(sent: 9), mode: mode)
        // A node that followed "g" up to seq 5 and stopped: it still holds that older state.
        var reloaded = Self.started(with: Self.stored(sent: 5), mode: mode)
        let before = Self.view(reloaded, "d", "b")
        var g = Self.stored(sent: 9)
        g.channels = ["g"]
        g.lastMessages = g.lastMessages.filter { $0.channelID == "g" }
        g.lastVisible = []
        g.messagesAfterMarks = g.messagesAfterMarks.filter { $0.channelID == "g" }
        g.versions = ["g": 9]
        reloaded.forgetStreams(of: ["g"])
        reloaded.loadStreams(g)
        for viewer in ["a", "b", "c"] {
            #expect(Self.view(reloaded, "g", viewer) == Self.view(fresh, "g", viewer), "viewer \(viewer)")
        }
        #expect(Self.view(reloaded, "g", "a").unread > 0 && Self.view(reloaded, "g", "c").unread == 0)
        #expect(Self.view(reloaded, "d", "b") == before, "the channel not reloaded keeps its state")
        #expect(Self.view(reloaded, "d", "b").last?.seq == 3, "its hidden newest still hidden from b")
    }

    @Test func aForgottenChannelShowsNothingUntilItIsLoaded() {
        var directory = Self.started(with: Self.stored(sent: 6), mode: .standard)
        directory.forgetStreams(of: ["g"])
        #expect(Self.view(directory, "g", "a") == View(last: nil, read: 0, unread: 0, version: 0))
        #expect(directory.channels["g"]?.members == ["a", "b", "c"], "members stay: every node hears those")
    }
}
