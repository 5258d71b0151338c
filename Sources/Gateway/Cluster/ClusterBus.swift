import ChatCore
import Dispatch
import EventLoop
import Logging
import Redis
import Synchronization

/// The cluster bus on Redis (PROTOCOL.md §13): every node publishes the writes it
/// committed, a chat channel's on that channel's stream (heard by the nodes that follow
/// it) and every other write on the control topic every node hears; the transport
/// (`BusTransport`) carries them on one Redis or on a Redis Cluster.
///
/// A node's own event is "ordered" once it comes back on its subscription (on a Redis
/// Cluster, a control event once every master took it): only then does `publish`'s
/// `ordered` run (the driver answers the requester and applies the write there), so a
/// reply follows everything the bus carried before it — a block's reply follows the
/// block on every node, and a message sent after it is filtered by it everywhere. When
/// the bus cannot carry an event (no connection, a failed publish, the subscription lost
/// before the echo), `ordered` runs at once: the write committed and this node's own
/// connections are served; `resumed` then asks the driver to send `session.resync` once
/// the subscription is whole again.
///
/// Everything here runs on one of the gateway's event loops, the transport's included.
///
/// Redis is not trusted blindly: every command has a deadline (`commandTimeout`, which
/// also bounds the wait for an event's echo), so a paused or partitioned Redis fails
/// requests and turns `/readyz` to 503 instead of hanging them; with a `BusSignature`
/// every payload is signed and checked; every payload is validated before it is applied
/// (`BusInputRules`), and what fails is dropped and counted.
///
/// The other cluster parts use the same transport (`ClusterRedis`): the shared rate
/// (`rates`), the cross-node connection entries (`connections`), presence (`presence`) and
/// the typing relay (`typing`) send their commands through it, and the bus hands them what
/// arrives on their topics.
final class ClusterBus: BusTransportDelegate, @unchecked Sendable {
    /// The control channel every node hears: users, blocks, channels (members, roles, bans).
    static let channel = "chat:bus"
    static let resyncChannel = "chat:resync"
    /// A chat channel's stream (its messages, changes and read marks) goes on its own Redis
    /// channel, heard by the nodes that follow it.
    static let streamPrefix = "chat:ch:"

    static func topic(of channel: ChannelID) -> String { streamPrefix + channel }

    /// Where `write` goes: its channel's stream, or the control channel.
    static func topic(for write: StoreWrite) -> String {
        switch write {
        case .insertMessage(let message): return topic(of: message.channelID)
        case .changeMessage(let change): return topic(of: change.channelID)
        case .markRead(let channelID, _, _): return topic(of: channelID)
        case .upsertUser, .setUserDeactivated, .createChannel, .updateChannel, .setBlock, .insertFlag: return channel
        }
    }

    /// The per-user message rate every node shares (PROTOCOL.md §6).
    let rates: SharedRateLimit
    /// Every node's live connections per user: the cluster-wide cap, who is offline everywhere.
    let connections: ClusterConnections
    /// Who is online on any node, as Redis orders the changes (PROTOCOL.md §14).
    let presence: ClusterPresence
    /// Typing changes to and from the other nodes.
    let typing: ClusterTyping

    private let redis: ClusterRedis
    private var transport: any BusTransport { redis.transport }
    var nodeID: String { redis.nodeID }
    var loop: EventLoop { redis.loop }
    private var settings: RedisConnectionSettings { redis.settings }
    private var logger: Logger { redis.logger }
    private var metrics: GatewayMetrics { redis.metrics }
    /// Another node's event, in bus order (called on the loop).
    private let received: @Sendable (BusEvent) -> Void
    /// The subscription is back after it was lost (called on the loop).
    private let resumed: @Sendable () -> Void
    /// Another node dropped events for these channels: their clients resync (on the loop).
    private let resyncRequested: @Sendable (ResyncScope) -> Void

    /// Every topic every node hears is subscribed (`BusTransport.isHearing`).
    private var subscribed = false
    /// The chat channels whose streams this node follows (`follow`); the transport keeps
    /// their subscriptions across reconnects.
    private var followed: Set<ChannelID> = []
    /// Stream topics whose subscription Redis confirmed on the current connection.
    private var confirmedTopics: Set<String> = []
    /// Callers of `follow` waiting for their topics' confirmations.
    private var followWaiters: [FollowWaiter] = []
    /// Live events may have been missed since the subscription was last up: resync when it is back.
    private var mayHaveMissedEvents = false
    private var lastNumber: UInt64 = 0
    /// This node's events published and not yet back on the subscription, by number.
    private var awaitingEcho: [UInt64: @Sendable () -> Void] = [:]
    /// When each of them was published (uptime ns), for the echo latency.
    private var publishedAt: [UInt64: UInt64] = [:]
    /// The numbers awaiting their echo in publish order, for the echo deadline.
    private var echoOrder: [UInt64] = []
    private var echoOrderHead = 0
    /// In `echoOrder`, the oldest event whose waiter may not have been served yet.
    private var releaseHead = 0
    private var echoCheckScheduled = false
    /// Committed events the bus did not take, published again once it does.
    private var outbox: BusOutbox
    private let reachable = Atomic<Bool>(false)

    /// Where the bus finds Redis: one server, or the seeds of a Redis Cluster.
    enum Redis {
        case single(RedisConnectionSettings)
        case cluster(RedisClusterSettings)
    }

    init(redis where: Redis, signature: BusSignature? = nil, nodeID: String, loop: EventLoop,
         logger: Logger, metrics: GatewayMetrics, outboxCapacityBytes: Int = BusOutbox.defaultCapacityBytes,
         received: @escaping @Sendable (BusEvent) -> Void, resumed: @escaping @Sendable () -> Void,
         presenceChanged: @escaping @Sendable (UserID, Bool, Milliseconds) -> Void = { _, _, _ in },
         presenceSnapshot: @escaping @Sendable ([(user: UserID, expiresAt: Milliseconds)]) -> Void = { _ in },
         typingReceived: @escaping @Sendable (TypingRelay) -> Void = { _ in },
         resyncRequested: @escaping @Sendable (ResyncScope) -> Void = { _ in }) {
        let transport: any BusTransport
        let settings: RedisConnectionSettings
        switch `where` {
        case .single(let single):
            settings = single
            transport = SingleRedisTransport(settings: single, nodeID: nodeID, loop: loop, logger: logger, metrics: metrics)
        case .cluster(let cluster):
            settings = cluster.node
            transport = ShardedRedisTransport(settings: cluster, nodeID: nodeID, loop: loop, logger: logger, metrics: metrics)
        }
        let redis = ClusterRedis(transport: transport, settings: settings, signature: signature, nodeID: nodeID, loop: loop,
                                 logger: logger, metrics: metrics)
        self.redis = redis
        let presence = ClusterPresence(redis: redis, changed: presenceChanged, snapshot: presenceSnapshot)
        self.presence = presence
        rates = SharedRateLimit(redis: redis)
        connections = ClusterConnections(redis: redis, presence: presence)
        typing = ClusterTyping(redis: redis, relayed: typingReceived)
        self.resyncRequested = resyncRequested
        outbox = BusOutbox(capacityBytes: outboxCapacityBytes)
        self.received = received
        self.resumed = resumed
    }

    func start() {
        loop.execute { [self] in
            transport.delegate = self
            transport.start(broadcastTopics: [Self.channel, Self.resyncChannel],
                            scriptTopics: [ClusterPresence.channel, ClusterTyping.channel])
        }
    }

    func stop() {
        loop.execute { [self] in
            transport.stop()
            releaseAwaiting()
        }
    }

    /// Publishing works and every topic every node hears is subscribed (`/readyz`).
    var isReachable: Bool { reachable.load(ordering: .relaxed) }

    /// Publishes `write` (committed, with the store's `result`) on its topic; `ordered` runs
    /// on the loop once the event is ordered (its echo, or every master's reply for a control
    /// event on a Redis Cluster), or at once when the bus cannot carry it or this node does
    /// not hear that topic.
    func publish(_ write: StoreWrite, result: StoreWriteResult, ordered: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            lastNumber += 1
            let number = lastNumber
            let topic = Self.topic(for: write)
            let payload = redis.seal(BusEvent(node: nodeID, number: number, write: write, result: result).encoded(),
                                     channel: topic)
            let scope = ResyncScope.of(write)
            guard transport.canPublish, outbox.isEmpty else {
                // The others may still be subscribed: they get it once this node can publish again.
                appendToOutbox(payload, topic: topic, number: number, scope: scope)
                noteMissed()
                if transport.canPublish { publishOutbox() }
                ordered()
                return
            }
            let isControl = topic == Self.channel
            guard isControl || confirmedTopics.contains(topic) else {
                // A stream this node does not hear (nobody here follows the channel, or its
                // subscription is not confirmed yet): no echo will come, and nothing here waits
                // for the event's order.
                send(payload, topic: topic, number: number, scope: scope) { _ in }
                ordered()
                return
            }
            let orderedByReply = isControl && transport.broadcastIsOrderedByReply
            guard orderedByReply || subscribed, !transport.isWaiting(longerThan: redis.answerWaitNanoseconds) else {
                // No echo to wait for (or Redis is already slow to answer, and the write's
                // answer must not wait on it): published for the others, acted on here at once.
                noteMissed()
                send(payload, topic: topic, number: number, scope: scope) { _ in }
                ordered()
                return
            }
            if orderedByReply { return publishOrderedByReply(payload, number: number, scope: scope, ordered: ordered) }
            awaitingEcho[number] = ordered
            publishedAt[number] = DispatchTime.now().uptimeNanoseconds
            echoOrder.append(number)
            scheduleEchoCheck()
            send(payload, topic: topic, number: number, scope: scope) { [self] published in
                guard !published, let waiting = awaitingEcho.removeValue(forKey: number) else { return }
                publishedAt[number] = nil
                noteMissed()
                waiting()
            }
        }
    }

    /// A control event on a transport that orders it by its replies: `ordered` runs once
    /// Redis took it everywhere, or after `ClusterRedis.answerWaitNanoseconds` (acted on here,
    /// the clients resync once the bus is whole). A slow reply is the command connection's
    /// to judge (its own timeout), not a sign that a subscription is stuck.
    private func publishOrderedByReply(_ payload: [UInt8], number: UInt64, scope: ResyncScope,
                                       ordered: @escaping @Sendable () -> Void) {
        awaitingEcho[number] = ordered
        let sent = DispatchTime.now().uptimeNanoseconds
        loop.queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: sent + redis.answerWaitNanoseconds)) { [self] in
            guard let waiting = awaitingEcho.removeValue(forKey: number) else { return }
            noteMissed()
            waiting()
        }
        send(payload, topic: Self.channel, number: number, scope: scope) { [self] published in
            guard let waiting = awaitingEcho.removeValue(forKey: number) else { return }
            if published { recordEchoLatency(since: sent) } else { noteMissed() }
            waiting()
        }
    }

    /// This node's event `number` is ordered: its waiter runs.
    private func echoed(_ number: UInt64) {
        if let sent = publishedAt.removeValue(forKey: number) { recordEchoLatency(since: sent) }
        awaitingEcho.removeValue(forKey: number)?()
    }

    private func recordEchoLatency(since sent: UInt64) {
        metrics.busEchoLatency.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - sent))
    }

    // MARK: following channels

    /// Someone waiting until Redis confirmed the subscription of `topics` (`follow`).
    private struct FollowWaiter {
        var topics: Set<String>
        var ready: @Sendable () -> Void
    }

    /// Starts hearing `channels`' streams: `ready` runs on the loop once Redis confirmed
    /// each subscription, so every event published after that reaches this node (the
    /// caller then reads the channels' state: what came before is in the store). Without a
    /// subscription now, `ready` runs at once: the events missed meanwhile are read again
    /// when it is back (`resumed`).
    func follow(_ channels: [ChannelID], ready: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            followed.formUnion(channels)
            metrics.busFollowedChannels.record(followed.count)
            let topics = Set(channels.map(Self.topic(of:))).subtracting(confirmedTopics)
            guard !topics.isEmpty else { return ready() }
            transport.follow(topics.sorted())
            guard subscribed else {
                noteMissed()
                return ready()
            }
            followWaiters.append(FollowWaiter(topics: topics, ready: ready))
        }
    }

    /// Stops hearing `channels`' streams.
    func unfollow(_ channels: [ChannelID]) {
        loop.execute { [self] in
            followed.subtract(channels)
            metrics.busFollowedChannels.record(followed.count)
            let topics = channels.map(Self.topic(of:))
            for topic in topics { confirmedTopics.remove(topic) }
            transport.unfollow(topics)
        }
    }

    func transportConfirmed(topic: String) {
        let channel = String(topic.dropFirst(Self.streamPrefix.count))
        guard followed.contains(channel) else { return }
        confirmedTopics.insert(topic)
        var still: [FollowWaiter] = []
        var ready: [@Sendable () -> Void] = []
        for var waiter in followWaiters {
            waiter.topics.remove(topic)
            if waiter.topics.isEmpty { ready.append(waiter.ready) } else { still.append(waiter) }
        }
        followWaiters = still
        for callback in ready { callback() }
    }

    /// The subscription is gone: the waiters go on (their reads are repeated once it is back).
    private func releaseFollowWaiters() {
        let waiting = followWaiters
        followWaiters.removeAll()
        for waiter in waiting { waiter.ready() }
    }

    // MARK: what the transport says

    func transportCanPublish() {
        publishOutbox()
        updateReachable()
    }

    func transportStoppedPublishing() {
        noteMissed()
        updateReachable()
    }

    func transportHearing() {
        subscribed = true
        updateReachable()
        // Changes missed while presence was not heard are made up from the set.
        presence.readSnapshot()
        if mayHaveMissedEvents {
            mayHaveMissedEvents = false
            logger.notice("bus.resumed", metadata: ["node": "\(nodeID)"])
            resumed()
        }
    }

    func transportLost(topics: [String], hearing: Bool) {
        if subscribed && !hearing { logger.error("bus.subscription_lost", metadata: ["node": "\(nodeID)"]) }
        subscribed = hearing
        noteMissed()
        // Only the streams said lost: on a Redis Cluster the other masters' subscriptions
        // stay and are never confirmed again (a single Redis names every followed stream).
        for topic in topics { confirmedTopics.remove(topic) }
        releaseFollowWaiters()
        updateReachable()
        releaseAwaiting()
    }

    func transportReceived(_ message: [UInt8], on topic: String) {
        switch topic {
        case ClusterPresence.channel:
            presence.received(message)
        case ClusterTyping.channel:
            typing.received(message)
        case Self.resyncChannel:
            guard let payload = redis.unseal(message, channel: Self.resyncChannel) else { return }
            guard let notice = BusResyncNotice.decode(payload) else {
                redis.rejectMalformed(Self.resyncChannel)
                return
            }
            if notice.node != nodeID { resyncRequested(notice.scope) }
        default:
            guard topic == Self.channel || topic.hasPrefix(Self.streamPrefix),
                  let payload = redis.unseal(message, channel: topic) else { return }
            if topic != Self.channel && ClusterTyping.isRelay(payload) {
                typing.received(payload: payload, on: topic)
                return
            }
            metrics.busEventsIn.increment()
            if topic != Self.channel { metrics.busStreamEventsIn.increment() }
            let event: BusEvent
            do {
                event = try BusEvent.decode(payload)
            } catch {
                metrics.busPayloadsRejectedMalformed.increment()
                logger.warning("bus.bad_event", metadata: ["error": "\(error)"])
                return
            }
            if event.node == nodeID {
                // A control event ordered by its replies is not ordered by its first copy.
                if topic != Self.channel || !transport.broadcastIsOrderedByReply { echoed(event.number) }
            } else {
                received(event)
            }
        }
    }

    // MARK: publishing

    /// Publishes what the bus did not take while this node could not publish, oldest
    /// first and before anything newer; what fails again goes back in front.
    private func publishOutbox() {
        guard transport.canPublish, !outbox.isEmpty || !outbox.droppedScope.isEmpty else { return }
        let (dropped, scope) = outbox.takeDroppedScope()
        if !scope.isEmpty {
            // Those events will never reach the others: their clients read them from history.
            logger.error("bus.outbox_dropped", metadata: ["events": .stringConvertible(dropped),
                                                          "channels": "\(scope.everything ? "all" : "\(scope.channels.count)")"])
            let notice = redis.seal(BusResyncNotice(node: nodeID, scope: scope).encoded(), channel: Self.resyncChannel)
            lastNumber += 1
            transport.broadcast(notice, on: Self.resyncChannel, number: lastNumber) { [self] published in
                // Not taken: asked again with the next outbox round.
                if !published { outbox.keepDroppedScope(scope, events: dropped) }
            }
        }
        guard !outbox.isEmpty else { return }
        let pending = outbox.takeAll()
        logger.notice("bus.outbox_published", metadata: ["events": .stringConvertible(pending.count)])
        var failed: [BusOutbox.Entry] = []
        var answered = 0
        for entry in pending {
            send(entry.payload, topic: entry.topic, number: entry.number, scope: entry.scope, outboxOnFailure: false) { [self] published in
                if !published { failed.append(entry) }
                answered += 1
                if answered == pending.count { outbox.putBack(failed) }
            }
        }
    }

    /// Publishes one (sealed) event: broadcast when it is a control event, on its channel's
    /// stream otherwise; `answered` gets whether Redis took it. A failed event goes to the
    /// outbox (`outboxOnFailure` false: the caller puts it back itself, in order).
    private func send(_ payload: [UInt8], topic: String, number: UInt64, scope: ResyncScope,
                      outboxOnFailure: Bool = true, answered: @escaping (Bool) -> Void) {
        metrics.busEventsOut.increment()
        let taken: (Bool) -> Void = { [self] published in
            if !published && outboxOnFailure { appendToOutbox(payload, topic: topic, number: number, scope: scope) }
            answered(published)
        }
        if topic == Self.channel {
            transport.broadcast(payload, on: topic, number: number, answered: taken)
        } else {
            transport.publish(payload, on: topic, answered: taken)
        }
    }

    private func appendToOutbox(_ payload: [UInt8], topic: String, number: UInt64, scope: ResyncScope) {
        let before = outbox.dropped
        outbox.append(payload, topic: topic, number: number, scope: scope)
        if outbox.dropped > before { metrics.busOutboxDropped.increment(by: outbox.dropped - before) }
    }

    // MARK: echo deadline

    /// The next echo check. A waiter whose echo is `ClusterRedis.answerWaitNanoseconds` late
    /// is served here; the oldest event must have its echo within the whole command timeout,
    /// otherwise the subscription is stuck and is dropped (every waiter is served at once and
    /// their channels resync when it is back).
    private func scheduleEchoCheck() {
        guard !echoCheckScheduled else { return }
        skipAnsweredWaiters()
        var due: UInt64?
        if releaseHead < echoOrder.count, let sent = publishedAt[echoOrder[releaseHead]] {
            due = sent + redis.answerWaitNanoseconds
        }
        while echoOrderHead < echoOrder.count, publishedAt[echoOrder[echoOrderHead]] == nil {
            echoOrderHead += 1
        }
        if echoOrderHead < echoOrder.count, let sent = publishedAt[echoOrder[echoOrderHead]] {
            due = min(due ?? .max, sent + settings.commandTimeoutNanoseconds)
        }
        compactEchoOrder()
        guard let due else { return }
        echoCheckScheduled = true
        loop.queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due)) { [self] in
            echoCheckScheduled = false
            checkEchoDeadline()
        }
    }

    /// Moves `releaseHead` past the events whose waiter was already served.
    private func skipAnsweredWaiters() {
        releaseHead = max(releaseHead, echoOrderHead)
        while releaseHead < echoOrder.count, awaitingEcho[echoOrder[releaseHead]] == nil {
            releaseHead += 1
        }
    }

    private func checkEchoDeadline() {
        let now = DispatchTime.now().uptimeNanoseconds
        // Waiters first: a write is acted on here once its echo is
        // `ClusterRedis.answerWaitNanoseconds` late, in publish order, and the clients resync
        // once the bus is whole again.
        skipAnsweredWaiters()
        while releaseHead < echoOrder.count {
            let number = echoOrder[releaseHead]
            guard let sent = publishedAt[number], now >= sent + redis.answerWaitNanoseconds else { break }
            noteMissed()
            awaitingEcho.removeValue(forKey: number)?()
            skipAnsweredWaiters()
        }
        while echoOrderHead < echoOrder.count {
            let oldest = echoOrder[echoOrderHead]
            guard let sent = publishedAt[oldest] else {
                echoOrderHead += 1
                continue
            }
            if now >= sent + settings.commandTimeoutNanoseconds {
                metrics.redisTimeouts.increment()
                transport.abandonSubscription("no echo within \(settings.commandTimeout)")
                // Abandoning released every waiter; if nothing was subscribed, release here.
                releaseAwaiting()
            }
            break
        }
        scheduleEchoCheck()
    }

    private func compactEchoOrder() {
        if echoOrderHead == echoOrder.count {
            echoOrder.removeAll(keepingCapacity: true)
            echoOrderHead = 0
            releaseHead = 0
        } else if echoOrderHead > 1_024 && echoOrderHead * 2 > echoOrder.count {
            echoOrder.removeFirst(echoOrderHead)
            releaseHead = max(releaseHead - echoOrderHead, 0)
            echoOrderHead = 0
        }
    }

    /// The events waiting for their echo will not get it: serve them here now.
    /// Also ends the echo deadlines of events whose waiter was served already.
    private func releaseAwaiting() {
        publishedAt.removeAll()
        guard !awaitingEcho.isEmpty else { return }
        noteMissed()
        let waiting = awaitingEcho.sorted { $0.key < $1.key }.map(\.value)
        awaitingEcho.removeAll()
        for ordered in waiting { ordered() }
    }

    /// Live events may have been missed: once the subscription is back, clients resync.
    private func noteMissed() {
        mayHaveMissedEvents = true
    }

    /// Tests: this node cannot publish for `duration` while its subscriptions stay (a node
    /// that cannot publish while the others hear each other).
    func holdPublisher(for duration: Duration) {
        loop.execute { [self] in transport.holdPublisher(for: duration) }
    }

    private func updateReachable() {
        reachable.store(subscribed && transport.canPublish, ordering: .relaxed)
    }
}
