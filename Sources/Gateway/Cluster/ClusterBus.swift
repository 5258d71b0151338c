import ChatCore
import Dispatch
import EventLoop
import Logging
import Redis
import Synchronization

/// The cluster bus on Redis (PROTOCOL.md §13): every node PUBLISHes the writes it
/// committed to one Redis channel and SUBSCRIBEs to it. Redis hands each subscriber
/// the messages in the order it executed the PUBLISHes, so every node sees every
/// event — its own included — in one order.
///
/// A node's own event is "ordered" once it comes back on its subscription: only then
/// does `published`'s `ordered` run (the driver answers the requester and applies the
/// write there), so a reply follows everything the bus carried before it — a block's
/// reply follows the block on every node, and a message sent after it is filtered by
/// it everywhere. When the bus cannot carry an event (no connection, a failed PUBLISH,
/// the subscription lost before the echo), `ordered` runs at once: the write committed
/// and this node's own connections are served; `resumed` then asks the driver to send
/// `session.resync` once the subscription is back.
///
/// Two connections (a subscribed one takes no other command), both on one of the
/// gateway's event loops; everything here runs on that loop. Reconnects with backoff.
///
/// Redis is not trusted blindly: every command has a deadline (`commandTimeout`, which
/// also bounds the wait for an event's echo), so a paused or partitioned Redis fails
/// requests and turns `/readyz` to 503 instead of hanging them; with a `BusSignature`
/// every payload is signed and checked; every payload is validated before it is applied
/// (`BusInputRules`), and what fails is dropped and counted.
///
/// The other cluster parts use the same connections (`ClusterRedis`): the shared rate
/// (`rates`), the cross-node connection entries (`connections`), presence (`presence`) and
/// the typing relay (`typing`) send their commands on the publish connection, and the bus
/// hands them what arrives on their channels of the subscription.
final class ClusterBus: @unchecked Sendable {
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

    /// The publish connection, which every part shares (`ClusterRedis`); the bus opens it.
    private var publisher: RedisConnection? {
        get { redis.publisher }
        set { redis.publisher = newValue }
    }
    private var subscriber: RedisConnection?
    private var subscribed = false
    /// The chat channels whose streams this node follows (`follow`), subscribed again after
    /// every reconnect.
    private var followed: Set<ChannelID> = []
    /// Stream topics whose subscription Redis confirmed on the current connection.
    private var confirmedTopics: Set<String> = []
    /// Callers of `follow` waiting for their topics' confirmations.
    private var followWaiters: [FollowWaiter] = []
    /// Live events may have been missed since the subscription was last up: resync when it is back.
    private var mayHaveMissedEvents = false
    private var publisherRetry = 0.05
    private var subscriberRetry = 0.05
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
    /// Tests: no publish connection before this (uptime ns).
    private var publisherHeldUntil: UInt64 = 0
    private var stopped = false
    private let reachable = Atomic<Bool>(false)

    init(settings: RedisConnectionSettings, signature: BusSignature? = nil, nodeID: String, loop: EventLoop,
         logger: Logger, metrics: GatewayMetrics, outboxCapacityBytes: Int = BusOutbox.defaultCapacityBytes,
         received: @escaping @Sendable (BusEvent) -> Void, resumed: @escaping @Sendable () -> Void,
         presenceChanged: @escaping @Sendable (UserID, Bool, Milliseconds) -> Void = { _, _, _ in },
         presenceSnapshot: @escaping @Sendable ([(user: UserID, expiresAt: Milliseconds)]) -> Void = { _ in },
         typingReceived: @escaping @Sendable (TypingRelay) -> Void = { _ in },
         resyncRequested: @escaping @Sendable (ResyncScope) -> Void = { _ in }) {
        let redis = ClusterRedis(settings: settings, signature: signature, nodeID: nodeID, loop: loop, logger: logger,
                                 metrics: metrics)
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
            connectPublisher()
            connectSubscriber()
        }
    }

    func stop() {
        loop.execute { [self] in
            stopped = true
            publisher?.close()
            subscriber?.close()
            releaseAwaiting()
        }
    }

    /// Both connections up and subscribed (`/readyz`).
    var isReachable: Bool { reachable.load(ordering: .relaxed) }

    /// Publishes `write` (committed, with the store's `result`) on its topic; `ordered` runs
    /// on the loop once the event is back on this node's subscription, or at once when the
    /// bus cannot carry it or this node does not hear that topic.
    func publish(_ write: StoreWrite, result: StoreWriteResult, ordered: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            lastNumber += 1
            let number = lastNumber
            let topic = Self.topic(for: write)
            let payload = redis.seal(BusEvent(node: nodeID, number: number, write: write, result: result).encoded(),
                                     channel: topic)
            let scope = ResyncScope.of(write)
            guard let publisher, publisher.isConnected, outbox.isEmpty else {
                // The others may still be subscribed: they get it once this node can publish again.
                appendToOutbox(payload, topic: topic, scope: scope)
                noteMissed()
                if self.publisher?.isConnected == true { publishOutbox() }
                ordered()
                return
            }
            guard topic == Self.channel || confirmedTopics.contains(topic) else {
                // A stream this node does not hear (nobody here follows the channel, or its
                // subscription is not confirmed yet): no echo will come, and nothing here waits
                // for the event's order.
                send(payload, topic: topic, scope: scope, on: publisher) { _ in }
                ordered()
                return
            }
            guard subscribed, !publisher.isWaiting(longerThan: redis.answerWaitNanoseconds) else {
                // No echo to wait for (or Redis is already slow to answer, and the write's
                // answer must not wait on it): published for the others, acted on here at once.
                noteMissed()
                send(payload, topic: topic, scope: scope, on: publisher) { _ in }
                ordered()
                return
            }
            awaitingEcho[number] = ordered
            publishedAt[number] = DispatchTime.now().uptimeNanoseconds
            echoOrder.append(number)
            scheduleEchoCheck()
            send(payload, topic: topic, scope: scope, on: publisher) { [self] published in
                guard !published, let waiting = awaitingEcho.removeValue(forKey: number) else { return }
                publishedAt[number] = nil
                noteMissed()
                waiting()
            }
        }
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
            guard subscribed, let subscriber, subscriber.isConnected else {
                noteMissed()
                return ready()
            }
            followWaiters.append(FollowWaiter(topics: topics, ready: ready))
            subscriber.subscribe(more: topics.sorted())
        }
    }

    /// Stops hearing `channels`' streams.
    func unfollow(_ channels: [ChannelID]) {
        loop.execute { [self] in
            followed.subtract(channels)
            metrics.busFollowedChannels.record(followed.count)
            let topics = channels.map(Self.topic(of:)).filter { confirmedTopics.remove($0) != nil }
            guard !topics.isEmpty, let subscriber, subscriber.isConnected else { return }
            subscriber.unsubscribe(topics.sorted())
        }
    }

    private func topicConfirmed(_ topic: String) {
        let channel = String(topic.dropFirst(Self.streamPrefix.count))
        if followed.contains(channel) {
            confirmedTopics.insert(topic)
        } else {
            // Unfollowed while its subscription was on its way: this node does not need it.
            subscriber?.unsubscribe([topic])
        }
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

    // MARK: connections

    private func connectPublisher() {
        guard !stopped else { return }
        var settings = self.settings
        settings.clientName = nodeID + "-publish"
        publisher = RedisConnection(settings: settings, loop: loop, connected: { [self] failure in
            if let failure {
                publisher = nil
                retry(publisher: true, failure)
            } else {
                publisherRetry = 0.05
                publishOutbox()
                updateReachable()
            }
        }, closed: { [self] reason in
            publisher = nil
            updateReachable()
            retry(publisher: true, reason ?? "closed")
        })
    }

    /// Publishes what the bus did not take while this node could not publish, oldest
    /// first and before anything newer; what fails again goes back in front.
    private func publishOutbox() {
        guard let publisher, !outbox.isEmpty || !outbox.droppedScope.isEmpty else { return }
        let (dropped, scope) = outbox.takeDroppedScope()
        if !scope.isEmpty {
            // Those events will never reach the others: their clients read them from history.
            logger.error("bus.outbox_dropped", metadata: ["events": "\(dropped)",
                                                          "channels": "\(scope.everything ? "all" : "\(scope.channels.count)")"])
            let notice = redis.seal(BusResyncNotice(node: nodeID, scope: scope).encoded(), channel: Self.resyncChannel)
            publisher.send([Array("PUBLISH".utf8), Array(Self.resyncChannel.utf8), notice]) { [self] reply in
                // Not taken: asked again with the next outbox round.
                if reply.isFailure { outbox.keepDroppedScope(scope, events: dropped) }
            }
        }
        guard !outbox.isEmpty else { return }
        let pending = outbox.takeAll()
        logger.notice("bus.outbox_published", metadata: ["events": "\(pending.count)"])
        var failed: [BusOutbox.Entry] = []
        var answered = 0
        for entry in pending {
            send(entry.payload, topic: entry.topic, scope: entry.scope, on: publisher, outboxOnFailure: false) { [self] published in
                if !published { failed.append(entry) }
                answered += 1
                if answered == pending.count { outbox.putBack(failed) }
            }
        }
    }

    /// PUBLISHes one (sealed) event; `answered` gets whether Redis took it. A failed event
    /// goes to the outbox (`outboxOnFailure` false: the caller puts it back itself, in order).
    private func send(_ payload: [UInt8], topic: String, scope: ResyncScope, on publisher: RedisConnection,
                      outboxOnFailure: Bool = true, answered: @escaping (Bool) -> Void) {
        metrics.busEventsOut.increment()
        publisher.send([Array("PUBLISH".utf8), Array(topic.utf8), payload]) { [self] reply in
            if reply.isFailure && outboxOnFailure { appendToOutbox(payload, topic: topic, scope: scope) }
            answered(!reply.isFailure)
        }
    }

    private func appendToOutbox(_ payload: [UInt8], topic: String, scope: ResyncScope) {
        let before = outbox.dropped
        outbox.append(payload, topic: topic, scope: scope)
        if outbox.dropped > before { metrics.busOutboxDropped.increment(by: outbox.dropped - before) }
    }

    private func connectSubscriber() {
        guard !stopped else { return }
        var settings = self.settings
        settings.clientName = nodeID + "-subscribe"
        subscriber = RedisConnection(settings: settings, loop: loop, connected: { [self] failure in
            if let failure {
                subscriber = nil
                retry(publisher: false, failure)
                return
            }
            subscriberRetry = 0.05
            let topics = [Self.channel, ClusterPresence.channel, ClusterTyping.channel, Self.resyncChannel]
                + followed.sorted().map(Self.topic(of:))
            subscriber?.subscribe(topics) { [self] reply in
                handleSubscription(reply)
            }
        }, closed: { [self] reason in
            subscriber = nil
            subscriptionLost()
            retry(publisher: false, reason ?? "closed")
        })
    }

    private func handleSubscription(_ reply: RedisReply) {
        switch reply {
        case .array(let parts) where parts.count == 3 && parts[0].text == "message" && parts[1].text == ClusterPresence.channel:
            guard case .string(let message) = parts[2] else { return }
            presence.received(message)
        case .array(let parts) where parts.count == 3 && parts[0].text == "message" && parts[1].text == ClusterTyping.channel:
            guard case .string(let message) = parts[2] else { return }
            typing.received(message)
        case .array(let parts) where parts.count == 3 && parts[0].text == "message" && parts[1].text == Self.resyncChannel:
            guard case .string(let message) = parts[2], let payload = redis.unseal(message, channel: Self.resyncChannel) else { return }
            guard let notice = BusResyncNotice.decode(payload) else {
                redis.rejectMalformed(Self.resyncChannel)
                return
            }
            if notice.node != nodeID { resyncRequested(notice.scope) }
        case .array(let parts) where parts.count == 3 && parts[0].text == "subscribe" && parts[1].text == ClusterPresence.channel:
            presence.readSnapshot()
        case .array(let parts) where parts.count == 3 && parts[0].text == "message":
            guard case .string(let message) = parts[2], let topic = parts[1].text,
                  topic == Self.channel || topic.hasPrefix(Self.streamPrefix),
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
                if let sent = publishedAt.removeValue(forKey: event.number) {
                    metrics.busEchoLatency.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - sent))
                }
                awaitingEcho.removeValue(forKey: event.number)?()
            } else {
                received(event)
            }
        case .array(let parts) where parts.count == 3 && parts[0].text == "subscribe"
            && parts[1].text?.hasPrefix(Self.streamPrefix) == true:
            // A channel's stream joined a subscription already up: not a resumption (events
            // this node may have missed are noted for the next one).
            if let topic = parts[1].text { topicConfirmed(topic) }
        case .array(let parts) where parts.count == 3 && parts[0].text == "subscribe":
            subscribed = true
            updateReachable()
            if mayHaveMissedEvents {
                mayHaveMissedEvents = false
                logger.notice("bus.resumed", metadata: ["node": "\(nodeID)"])
                resumed()
            }
        case .disconnected:
            subscriptionLost()
        default:
            break
        }
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
                subscriber?.abandon("no echo within \(settings.commandTimeout)")
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

    private func subscriptionLost() {
        if subscribed { logger.error("bus.subscription_lost", metadata: ["node": "\(nodeID)"]) }
        subscribed = false
        confirmedTopics.removeAll()
        releaseFollowWaiters()
        updateReachable()
        releaseAwaiting()
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

    private func retry(publisher isPublisher: Bool, _ reason: String) {
        guard !stopped else { return }
        if reason.contains(RedisConnection.timeoutReason) { metrics.redisTimeouts.increment() }
        noteMissed()
        let delay = isPublisher ? publisherRetry : subscriberRetry
        if isPublisher { publisherRetry = min(publisherRetry * 2, 2) } else { subscriberRetry = min(subscriberRetry * 2, 2) }
        logger.warning("bus.reconnect", metadata: [
            "connection": "\(isPublisher ? "publish" : "subscribe")", "reason": "\(reason)",
            "retryMs": "\(Int(delay * 1000))",
        ])
        let now = DispatchTime.now().uptimeNanoseconds
        let held = isPublisher && publisherHeldUntil > now ? publisherHeldUntil - now : 0
        loop.queue.asyncAfter(deadline: .now() + delay + .nanoseconds(Int(held))) { [self] in
            if isPublisher { connectPublisher() } else { connectSubscriber() }
        }
    }

    /// Tests: closes the publish connection and keeps it closed for `duration`, while the
    /// subscription stays (a node that cannot publish while the others hear each other).
    func holdPublisher(for duration: Duration) {
        loop.execute { [self] in
            let (seconds, attoseconds) = duration.components
            publisherHeldUntil = DispatchTime.now().uptimeNanoseconds + UInt64(seconds) * 1_000_000_000
                + UInt64(attoseconds / 1_000_000_000)
            publisher?.close()
        }
    }

    private func updateReachable() {
        reachable.store(subscribed && publisher?.isConnected == true, ordering: .relaxed)
    }
}
