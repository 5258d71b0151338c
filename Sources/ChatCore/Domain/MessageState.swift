/// A stored message with who reacted and who replied: what the engine judges a change
/// against (author, tombstone, reaction kinds) and what it computes each viewer's counts
/// from (§15: reactions and replies of users a block hides from the viewer do not count).
public struct MessageState: Sendable, Equatable {
    public var message: Message
    /// Users per reaction kind.
    public var reactors: [String: Set<UserID>]
    /// The thread's replies, counted per (sender, hidden-from) pair.
    public var replies: [ReplyTally]

    public init(message: Message, reactors: [String: Set<UserID>] = [:], replies: [ReplyTally] = []) {
        self.message = message
        self.reactors = reactors
        self.replies = replies
    }

    /// The kinds `user` reacted with, sorted.
    public func reactions(of user: UserID) -> [String] {
        reactors.compactMap { $0.value.contains(user) ? $0.key : nil }.sorted()
    }

    /// Counts one more reply of `sender` (hidden from `hiddenFrom`).
    public mutating func addReply(sender: UserID, hiddenFrom: UserID?) {
        if let index = replies.firstIndex(where: { $0.sender == sender && $0.hiddenFrom == hiddenFrom }) {
            replies[index].count += 1
        } else {
            replies.append(ReplyTally(sender: sender, hiddenFrom: hiddenFrom, count: 1))
        }
        message.replyCount += 1
    }

    /// Entries it holds, for the bound of the engine's cache.
    var weight: Int { 1 + reactors.values.reduce(0) { $0 + $1.count } + replies.count }
}

/// How many replies of one sender a thread holds, and whom they are hidden from.
public struct ReplyTally: Sendable, Hashable {
    public var sender: UserID
    public var hiddenFrom: UserID?
    public var count: Int

    public init(sender: UserID, hiddenFrom: UserID?, count: Int) {
        self.sender = sender
        self.hiddenFrom = hiddenFrom
        self.count = count
    }
}

/// For a range of a channel's messages: the reactions of some users and the replies that
/// depend on a viewer's blocks. A page of history is adjusted for its viewer with one read
/// of these instead of a read per message.
public struct MessageAttributions: Sendable, Equatable {
    public struct Reaction: Sendable, Hashable {
        public var seq: Int64
        public var user: UserID
        public var kind: String

        public init(seq: Int64, user: UserID, kind: String) {
            self.seq = seq
            self.user = user
            self.kind = kind
        }
    }

    public struct Replies: Sendable, Hashable {
        public var parentSeq: Int64
        public var tally: ReplyTally

        public init(parentSeq: Int64, tally: ReplyTally) {
            self.parentSeq = parentSeq
            self.tally = tally
        }
    }

    public var reactions: [Reaction]
    public var replies: [Replies]

    public init(reactions: [Reaction] = [], replies: [Replies] = []) {
        self.reactions = reactions
        self.replies = replies
    }
}
