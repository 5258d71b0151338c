import ChatCore
import Dispatch
import EventLoop
import Logging
import Storage

/// The chat engine's driver: feeds the engine (`ChatEngine`, which decides everything)
/// requests, store outcomes and bus events on one serial queue, and carries its effects
/// out: writes through the store (group commit), replies and events through the hub
/// shards of the event loops, the bus in cluster mode.
final class ChatService: @unchecked Sendable {
    let queue = DispatchQueue(label: "chat-gateway.core")
    /// Requests, commits and lookups reach the core through this, in bursts.
    let inbox: BatchingQueue
    /// Store outcomes reach the core through this, in bursts (`settle`); `settling` is the
    /// burst being run (touched only on `queue`).
    let outcomes = WriteOutcomeInbox()
    var settling: [WriteOutcomeInbox.Outcome] = []
    let clock: any ChatCore.Clock
    let store: any Store
    let push: any PushSink
    let tokens: TokenAuthority
    /// The per-connection request budget and the per-user connection cap (§6).
    let limits: GatewayConfiguration.Limits
    /// Origins a browser upgrade may come from (empty: any).
    let allowedOrigins: [String]
    let logger: Logger
    let metrics: GatewayMetrics

    /// Core state, touched only on `queue`: every chat decision is the engine's.
    var engine = ChatEngine()
    /// Upgrades whose sessions the engine is deciding, by session id.
    var openings: [SessionID: SessionOpening] = [:]
    /// Each loop's hub-shard slots: the next never used, and those freed by closed sessions.
    var nextSlot: [Int]
    var freeSlots: [[Int]]
    var lastSessionSerial: UInt32 = 0
    /// Admin API calls waiting for the engine's reply, by number.
    var adminReplies: [UInt64: @Sendable (EngineReply) -> Void] = [:]
    var lastAdminCall: UInt64 = 0
    /// The engine's message counters as last reported to `metrics`.
    var reportedCounters = MessageCounters()
    /// Indexed by loop index.
    private let shards: [HubShard]
    /// Set in cluster mode (PROTOCOL.md §13): committed writes travel through it.
    var bus: ClusterBus? {
        didSet { if bus != nil { scheduleConnectionRefresh() } }
    }
    /// Cluster mode: channels to start following, gathered over one pass of the core.
    var channelsToFollow: [ChannelID] = []
    /// Cluster mode: the store reads of channels started to follow, batched.
    let streamReads = StreamReadBatcher()
    /// Cluster mode: each live session's entry in its user's cluster-wide connection set.
    var connectionEntries: [SessionID: (user: UserID, entry: String)] = [:]
    var lastConnectionEntry: UInt64 = 0
    /// The retry of failed background profile writes (ChatService+UserWrites).
    var userRetryScheduled = false
    var userRetryDelaySeconds: Double = 0

    init(store: any Store, push: any PushSink, tokens: TokenAuthority, clock: any ChatCore.Clock, configuration: GatewayConfiguration,
         loops: [EventLoop], logger: Logger, metrics: GatewayMetrics = GatewayMetrics()) throws(StoreError) {
        self.store = store
        self.push = push
        self.tokens = tokens
        self.clock = clock
        limits = configuration.limits
        allowedOrigins = configuration.server.allowedOrigins
        self.logger = logger
        self.metrics = metrics
        inbox = BatchingQueue(queue: queue)
        engine = ChatEngine(cursors: CursorSealer(secret: configuration.auth.jwtSecret), settings: ChatEngine.Settings(configuration))
        shards = loops.sorted { $0.index < $1.index }.map { HubShard(loop: $0, metrics: metrics) }
        nextSlot = Array(repeating: 0, count: shards.count)
        freeSlots = Array(repeating: [], count: shards.count)
        let snapshot = try store.loadSnapshot()
        engine.load(users: snapshot.users, channels: snapshot.channels, lastMessages: snapshot.lastMessages,
                    lastVisible: snapshot.lastVisibleMessages, blocks: snapshot.blocks, readMarks: snapshot.readMarks,
                    messagesAfterMarks: snapshot.messagesAfterMarks, versions: snapshot.channelVersions)
        // Bans with an end lift themselves (§16): each is looked at when it ends.
        inbox.async { [self] in run(engine.banExpiries(now: clock.now())) }
    }

    /// Strict mode, before the first session: the recent messages of the channels where two
    /// members are blocked with each other, so each member's `lastMessage` skips the senders
    /// it is blocked with (`ChatEngine.channelsNeedingSendersNewest`). No viewer: messages
    /// stored hidden from a member are read too (their senders see them).
    func restoreSendersNewest() async throws(StoreError) {
        for channel in queue.sync(execute: { engine.channelsNeedingSendersNewest() }) {
            let store = self.store
            let read = await withCheckedContinuation { (done: CheckedContinuation<Result<[Message], StoreError>, Never>) in
                store.history(channelID: channel, viewer: "", beforeSeq: nil, afterSeq: nil, limit: 200, thread: nil) { done.resume(returning: $0) }
            }
            let messages = try read.get()
            queue.sync { engine.recordSendersNewest(messages) }
        }
    }

    // MARK: hub

    func shard(for loop: EventLoop) -> HubShard? { shard(at: loop.index) }

    func shard(at loopIndex: Int) -> HubShard? { shards.indices.contains(loopIndex) ? shards[loopIndex] : nil }

    /// Runs `body` on every loop's shard, in order after everything queued before.
    func forEachShard(_ body: @escaping @Sendable (HubShard) -> Void) {
        for shard in shards {
            shard.loop.execute { body(shard) }
        }
    }

    /// Replies to one session on its loop (the one reply of one of its requests); the id says
    /// which loop that is, and a session that closed meanwhile gets nothing.
    func reply(to session: SessionID, _ bytes: [UInt8]) {
        guard let shard = shard(at: SessionAddress(session).loopIndex) else { return }
        shard.loop.execute { shard.session(session)?.sendReply(bytes) }
    }

    func reply(to session: SessionID, requestID: JSONValue, error: ChatError) {
        reply(to: session, WireEncoding.error(id: requestID, error))
    }

    /// `ok` with a result object the engine encoded.
    func reply(to session: SessionID, requestID: JSONValue, json: [UInt8]) {
        reply(to: session, WireEncoding.ok(id: requestID, capacity: 64 + json.count) { $0.raw(bytes: json) })
    }

    /// Queues `event` to the sessions of `channel` on every loop (except `excluded`).
    func publish(_ event: SharedEvent, to channel: ChannelID, excluding excluded: SessionID?) {
        // One closure per loop (through `forEachShard` it would be one more per event).
        for shard in shards {
            shard.loop.execute { shard.deliver(event, to: channel, excluding: excluded) }
        }
    }

    func publish(_ event: SharedEvent, toUsers users: [UserID], excluding excluded: SessionID?) {
        for shard in shards {
            shard.loop.execute { shard.deliver(event, toUsers: users, excluding: excluded) }
        }
    }

    // MARK: requests

    /// Called on the session's loop; decides on the core queue.
    func handle(_ request: Request, from session: SessionRecord) {
        inbox.async { [self] in
            // Most requests name no user this node could be missing: they go on at once,
            // without a second closure.
            guard bus != nil, case let named = request.command.namedUsers, !named.isEmpty else {
                return answer(request, from: session)
            }
            withKnownUsers(named) { [self] in answer(request, from: session) }
        }
    }

    private func answer(_ request: Request, from session: SessionRecord) {
        do throws(ChatError) {
            try dispatch(request, from: session)
        } catch {
            reply(to: session.id, requestID: request.id, error: error)
        }
    }

    /// Runs `body` on the core queue once every user of `ids` that exists is known here. In a
    /// cluster a user another node created reaches this node over the bus a little after its
    /// row commits: one this node has not heard of is looked up in the store first, so a
    /// request naming it is not refused with `ERR_UID_NOT_FOUND` (§13: as on one node).
    func withKnownUsers(_ ids: [UserID], _ body: @escaping @Sendable () -> Void) {
        guard bus != nil, ids.contains(where: { !engine.knows($0) }) else { return body() }
        let unknown = Array(Set(ids.filter { !engine.knows($0) }))
        store.users(unknown) { [self] result in
            inbox.async { [self] in
                if case .success(let users) = result { engine.usersLearned(users) }
                body()
            }
        }
    }

    private func dispatch(_ request: Request, from session: SessionRecord) throws(ChatError) {
        let id = request.id
        let user = session.userID
        switch request.command {
        case .me:
            reply(to: session.id, requestID: id, json: try engine.me(user))
        case .userGet(let target):
            reply(to: session.id, requestID: id, json: try engine.user(target, seenBy: user))
        case .userList(let ids, let key, let values, let limit, let cursor):
            reply(to: session.id, requestID: id, json: try engine.listUsers(ids: ids, metadataKey: key, metadataValues: values, limit: limit,
                                                              cursor: cursor, seenBy: user))
        case .userUpdate(let name, let image, let metadata):
            userUpdate(id: id, session: session, name: name, image: image, metadata: metadata)
        case .userBlock(let targets):
            setBlocks(id: id, session: session, targets: targets, isBlocked: true)
        case .userUnblock(let targets):
            setBlocks(id: id, session: session, targets: targets, isBlocked: false)
        case .userBlockedList(let direction, let limit, let search, let userIDs, let cursor):
            reply(to: session.id, requestID: id, json: try engine.blockedUsers(of: user, direction: direction, limit: limit, search: search,
                                                                 userIDs: userIDs, cursor: cursor))
        case .channelCreate(let type, let userIDs, let name, let distinct, let push):
            changeChannel(.create(type: type, userIDs: userIDs, name: name, distinct: distinct, pushFromBlockedUsers: push),
                          id: id, session: session)
        case .channelGet(let channelID):
            reply(to: session.id, requestID: id, json: try engine.channel(channelID, seenBy: user))
        case .channelList(let limit, let cursor):
            reply(to: session.id, requestID: id, json: try engine.listChannels(of: user, limit: limit, cursor: cursor))
        case .channelInvite(let channelID, let userIDs):
            changeChannel(.invite(channelID, userIDs), id: id, session: session)
        case .channelJoin(let channelID):
            changeChannel(.join(channelID), id: id, session: session)
        case .channelLeave(let channelID):
            changeChannel(.leave(channelID), id: id, session: session)
        case .channelUpdate(let channelID, let name, let push, let frozen, let slowMode):
            changeChannel(.update(channelID, name: name, pushFromBlockedUsers: push, frozen: frozen, slowModeSeconds: slowMode),
                          id: id, session: session)
        case .channelSetRole(let channelID, let target, let role):
            changeChannel(.setRole(channelID, target, role), id: id, session: session)
        case .channelBan(let channelID, let target, let ban):
            changeChannel(.ban(channelID, target, ban), id: id, session: session)
        case .channelUnban(let channelID, let target):
            changeChannel(.unban(channelID, target), id: id, session: session)
        case .channelMute(let channelID, let mute):
            changeChannel(.mute(channelID, mute), id: id, session: session)
        case .userMute(let targets):
            run(engine.muteUsers(targets, muted: true, by: user, for: .session(session.id, requestID: id), now: clock.now()))
        case .userUnmute(let targets):
            run(engine.muteUsers(targets, muted: false, by: user, for: .session(session.id, requestID: id), now: clock.now()))
        case .messageFlag(let channelID, let seq, let reason):
            requestChange(.flag(reason: reason), channelID, seq, id: id, session: session)
        case .messageSend(let channelID, let text, let data, let clientMessageID, let parentSeq, let mentions):
            run(engine.sendMessage(channelID, text: text, dataJSON: data, clientMessageID: clientMessageID, parentSeq: parentSeq,
                                   mentionedUserIDs: mentions, from: user, device: session.device,
                                   for: .session(session.id, requestID: id), now: clock.now(), monotonicNow: clock.monotonicNow()))
        case .messageHistory(let channelID, let before, let after, let limit, let cursor, let parentSeq):
            run(engine.readHistory(channelID, beforeSeq: before, afterSeq: after, limit: limit, cursor: cursor, thread: parentSeq,
                                   by: user, hideBlocked: session.hideBlocked, for: .session(session.id, requestID: id)))
        case .messageUpdate(let channelID, let seq, let edit):
            requestChange(.edit(edit), channelID, seq, id: id, session: session)
        case .messageDelete(let channelID, let seq):
            requestChange(.delete, channelID, seq, id: id, session: session)
        case .reactionAdd(let channelID, let seq, let kind):
            requestChange(.addReaction(kind), channelID, seq, id: id, session: session)
        case .reactionRemove(let channelID, let seq, let kind):
            requestChange(.removeReaction(kind), channelID, seq, id: id, session: session)
        case .messageChanges(let channelID, let afterVersion, let limit):
            run(engine.readChanges(channelID, afterVersion: afterVersion, limit: limit, by: user, hideBlocked: session.hideBlocked,
                                   for: .session(session.id, requestID: id)))
        case .typingStart(let channelID):
            run(engine.typingStart(channelID, from: user, session: session.id, for: .session(session.id, requestID: id),
                                   monotonicNow: clock.monotonicNow()))
        case .typingStop(let channelID):
            run(engine.typingStop(channelID, from: user, session: session.id, for: .session(session.id, requestID: id),
                                  monotonicNow: clock.monotonicNow()))
        case .channelMarkRead(let channelID, let seq):
            run(engine.markRead(channelID, seq: seq, by: user, session: session.id, for: .session(session.id, requestID: id)))
        case .presenceSubscribe(let targets):
            defer { reportCounters() }
            reply(to: session.id, requestID: id, json: try engine.presenceSubscribe(session: session.id, user: user, to: targets))
        case .presenceUnsubscribe(let targets):
            engine.presenceUnsubscribe(session: session.id, from: targets)
            reportCounters()
            reply(to: session.id, requestID: id, json: ChatEngine.emptyObject)
        }
    }
}
