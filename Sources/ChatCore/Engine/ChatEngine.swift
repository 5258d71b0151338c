/// The chat core's decisions as a value: it owns the directory and the writes in flight,
/// takes requests and write outcomes, and answers with effects for a driver to carry out
/// (`EngineEffect`). Sans-IO: no queue, no clock (`now` is an argument), no store.
///
/// State changes only with what committed: a mutation is planned against the directory,
/// persisted, and applied when its write commits; a write that fails leaves memory as it
/// was, so a retry finds the change still to make and writes it again.
public struct ChatEngine: Sendable {
    /// The configuration behind the engine's decisions (PROTOCOL.md §5 options).
    public struct Settings: Sendable {
        public var blockingMode = DeliveryPolicy.Mode.standard
        public var revealBlockedBy = false
        public var excludeFromInvitations = false
        /// In characters of a message's `text`.
        public var maxTextLength = 5000
        /// §6 per user across its connections; 0 turns the limit off.
        public var userMessagesPerSecond = 0
        public var userMessageBurst = 5
        /// Live deliveries per open channel; 0 turns the throttle off.
        public var openChannelMessagesPerSecond = 0
        /// The per-user rate is kept outside, shared by every node (cluster mode): a send asks
        /// with `takeRate` and continues with `rateTaken`. This node's own limiter answers
        /// only while the shared one cannot.
        public var sharedUserRate = false
        /// §6: live connections per user on this node (across nodes the cluster counts).
        public var maxConnectionsPerUser = 30
        /// §15: edits, deletes and reactions per user across its connections; 0 turns the limit off.
        public var userChangesPerSecond = 0
        public var userChangeBurst = 10
        /// How long a message's reaction events are held back after one went out, so a
        /// storm sends each connection one event per window (0: every reaction at once).
        public var reactionEventWindowMilliseconds: Milliseconds = 100
        /// Channels with more members than this hear typing as `typing.users` lists
        /// (`TypingSummaries`) instead of each typist's events (0: never).
        public var typingListAboveMembers = 100
        /// Cluster mode: the node follows only the channels where a member holds a session
        /// here, each for this long after its last one left (`ChannelInterest`); nil: one
        /// node, which follows every channel.
        public var followGraceMilliseconds: Milliseconds? = nil

        public init(blockingMode: DeliveryPolicy.Mode = .standard, revealBlockedBy: Bool = false,
                    excludeFromInvitations: Bool = false, maxTextLength: Int = 5000, userMessagesPerSecond: Int = 0,
                    userMessageBurst: Int = 5, openChannelMessagesPerSecond: Int = 0, sharedUserRate: Bool = false,
                    maxConnectionsPerUser: Int = 30, userChangesPerSecond: Int = 0, userChangeBurst: Int = 10,
                    reactionEventWindowMilliseconds: Milliseconds = 100, typingListAboveMembers: Int = 100,
                    followGraceMilliseconds: Milliseconds? = nil) {
            self.blockingMode = blockingMode
            self.revealBlockedBy = revealBlockedBy
            self.excludeFromInvitations = excludeFromInvitations
            self.maxTextLength = maxTextLength
            self.userMessagesPerSecond = userMessagesPerSecond
            self.userMessageBurst = userMessageBurst
            self.openChannelMessagesPerSecond = openChannelMessagesPerSecond
            self.sharedUserRate = sharedUserRate
            self.maxConnectionsPerUser = maxConnectionsPerUser
            self.userChangesPerSecond = userChangesPerSecond
            self.userChangeBurst = userChangeBurst
            self.reactionEventWindowMilliseconds = reactionEventWindowMilliseconds
            self.typingListAboveMembers = typingListAboveMembers
            self.followGraceMilliseconds = followGraceMilliseconds
        }
    }

    public let settings: Settings
    /// Seals the cursors of list pages (`next`), so a client cannot forge one.
    public let cursors: CursorSealer
    /// Makes message and channel ids; injected, so a replay with the same seed makes the same ids.
    let ids: IdentifierGenerator
    /// Users, channels, blocks and read state as committed; only the engine changes it.
    public internal(set) var directory: ChatDirectory
    /// The live sessions admitted here.
    var sessions = LiveSessions()
    private var lastWriteID: WriteID = 0
    /// Block writes in flight, by write.
    var blockWrites: [WriteID: BlockWrite] = [:]
    /// Block requests waiting for their writes, by batch.
    var blockBatches: [UInt64: BlockBatch] = [:]
    var lastBatchID: UInt64 = 0
    /// For each (blocker, blocked) pair with writes in flight: the value the last of them
    /// sets, and how many there are. A request decides against it, not against the
    /// directory, so a block followed at once by an unblock still writes the unblock.
    var pendingBlocks: [BlockPair: (isBlocked: Bool, writes: Int)] = [:]
    /// Channel writes in flight, by write.
    var channelWrites: [WriteID: ChannelWrite] = [:]
    /// Channels (and distinct member sets) with a write in flight, each with the requests
    /// that wait for it to settle: one change at a time per channel, each planned against
    /// what the one before committed.
    var busyChannels: [String: [ChannelRequest]] = [:]

    /// Profile rows: users with a write in flight, users whose row changed in the background
    /// meanwhile, requests waiting for the write, background writes that failed.
    var userWrites: [WriteID: UserWrite] = [:]
    var usersWriting: Set<UserID> = []
    var usersDirty: Set<UserID> = []
    var usersWaiting: [UserID: [UserRequest]] = [:]
    var usersUnsaved: Set<UserID> = []

    /// Messages: sends being stored, sends waiting for their lookup or rate, the retries
    /// waiting for a send of the same `clientMessageId`, the §6 limits, the block relations per sender, dense user numbers.
    var messageWrites = WritesInOrder<MessageSend>()
    var pendingSends = SendsInArrivalOrder()
    var clientMessages: [ClientMessageKey: [Requester]] = [:]
    var userMessageRates: TokenBucketLimiter<UserNumber>?
    var openChannelRates: SlidingWindowLimiter<ChannelID>?
    /// Users whose last send was refused (their next refusal is not logged again).
    var limitedUsers: Set<UserID> = []
    var relationsCache = SenderRelationsCache()
    var userNumbers: [UserID: UserNumber] = [:]
    /// `message.history` pages being read, by read.
    var historyReads: [WriteID: HistoryRead] = [:]
    /// Messages waiting for a predecessor, and the gap reads on their way (by channel).
    var heldMessages = HeldMessages()
    var gapReads: [WriteID: ChannelID] = [:]
    var presence = PresenceSubscriptions() {
        didSet { counters.presenceSubscriptions = presence.total }
    }
    var typing = TypingStates()
    var typingLists = TypingSummaries()
    /// What each separately judged connection last heard of a listing channel's typists.
    var typingListViews: [TypingListView: [UserID]] = [:]
    /// `channel.markRead` writes in flight (by write, and which member's is in flight), the
    /// marks asked for meanwhile, and when each reader's `channel.read` last went out.
    var readWrites: [WriteID: ReadMarkWrite] = [:]
    var readMarksWriting: [ReadEventPacing.Key: WriteID] = [:]
    var readMarksQueued: [ReadEventPacing.Key: ReadMarkWrite] = [:]
    var readPacing = ReadEventPacing()
    /// The message lifecycle (§15): the engine's copy of messages being changed, change
    /// requests waiting for one, change writes in flight, committed changes waiting their
    /// turn per channel, replies waiting for their parent, held-back reaction events, the
    /// per-user change rate, and the members of each channel blocked with anyone.
    var messageStates = MessageStates()
    var changeRequests: [MessageStates.Key: [ChangeRequest]] = [:]
    var changeWrites: [WriteID: (MessageChange, ChangeAnswer)] = [:]
    var changeLog: [ChannelID: [LoggedChange]] = [:]
    var repliesAwaitingParent: [MessageStates.Key: [WriteID]] = [:]
    var reactionWindows: [MessageStates.Key: ReactionWindow] = [:]
    var userChangeRates: TokenBucketLimiter<UserNumber>?
    /// Change requests waiting for the shared change rate's answer (cluster mode).
    var changesAwaitingRate: [WriteID: ChangeRequest] = [:]
    var relatedMembersCache: [ChannelID: Set<UserID>] = [:]
    var relatedMembersRevision: (UInt64, UInt64) = (0, 0)
    /// `message.changes` pages being read, and history pages waiting for their attributions.
    var changeReads: [WriteID: ChangesRead] = [:]
    var attributionReads: [WriteID: AttributedPage] = [:]
    public internal(set) var counters = MessageCounters()
    /// §16: each member's last accepted send per slow-mode channel (on this node), and flag
    /// writes in flight with whom they answer.
    var slowModeSends: [SlowModeKey: Milliseconds] = [:]
    var flagWrites: [WriteID: Requester] = [:]
    /// Cluster mode: the channels this node follows (nil: every channel, one node).
    var interest: ChannelInterest?
    /// What the streams of channels being read did meanwhile, in order.
    var deferredStreams: [ChannelID: [DeferredStreamWrite]] = [:]
    /// Sessions admitted and waiting for their channels to be read, in arrival order.
    var sessionsAwaitingStreams: [SessionID] = []
    /// Channels being read for members who joined them: the newest seq at their join.
    var catchUpFrom: [ChannelID: Int64] = [:]
    var catchUpReads: [WriteID: CatchUpRead] = [:]

    public init(directory: ChatDirectory = ChatDirectory(), cursors: CursorSealer = CursorSealer(secret: ""),
                settings: Settings = Settings(), ids: IdentifierGenerator = IdentifierGenerator()) {
        self.directory = directory
        self.ids = ids
        self.directory.isStrict = settings.blockingMode == .strict
        self.settings = settings
        self.cursors = cursors
        if settings.userMessagesPerSecond > 0 {
            userMessageRates = TokenBucketLimiter(ratePerSecond: settings.userMessagesPerSecond,
                                                  burst: max(1, settings.userMessageBurst))
        }
        if settings.userChangesPerSecond > 0 {
            userChangeRates = TokenBucketLimiter(ratePerSecond: settings.userChangesPerSecond,
                                                 burst: max(1, settings.userChangeBurst))
        }
        if settings.openChannelMessagesPerSecond > 0 {
            openChannelRates = SlidingWindowLimiter(limit: settings.openChannelMessagesPerSecond)
        }
        if let grace = settings.followGraceMilliseconds { interest = ChannelInterest(grace: grace) }
    }

    /// Sends with a `clientMessageId` being looked up or stored (for tests: once stored,
    /// nothing of a send stays in memory; the store answers later retries).
    public var clientMessagesInFlight: Int { clientMessages.count }

    /// `{}`: the result of requests that answer nothing more.
    public static let emptyObject = Array("{}".utf8)

    /// Writes in flight (for tests and metrics).
    public var writesInFlight: Int {
        blockWrites.count + channelWrites.count + userWrites.count + messageWrites.count + readWrites.count + changeWrites.count
            + flagWrites.count
    }

    mutating func nextWriteID() -> WriteID {
        lastWriteID &+= 1
        return lastWriteID
    }

    /// The outcome of a write the engine asked for; `monotonicNow` paces open channels (§6).
    public mutating func committed(_ write: WriteID, _ outcome: WriteOutcome, monotonicNow: Milliseconds = 0) -> [EngineEffect] {
        if let send = messageWrites.settle(write) { return messageCommitted(send, outcome, monotonicNow: monotonicNow) }
        if let block = blockWrites.removeValue(forKey: write) { return blockCommitted(block, outcome) }
        if let change = channelWrites.removeValue(forKey: write) { return channelCommitted(change, outcome) }
        if let row = userWrites.removeValue(forKey: write) { return userCommitted(row, outcome) }
        if let mark = readWrites.removeValue(forKey: write) { return readMarkCommitted(mark, outcome, monotonicNow: monotonicNow) }
        if let (change, answer) = changeWrites.removeValue(forKey: write) { return changeCommitted(change, answer, outcome) }
        if let requester = flagWrites.removeValue(forKey: write) { return flagCommitted(requester, outcome) }
        return []
    }
}
