import Dispatch
import EventLoop
import Logging
import Redis

/// The bus on one Redis: two connections, one for every command and PUBLISH, one
/// SUBSCRIBEd (a subscribed connection takes no other command). Redis hands each
/// subscriber the messages of all channels in the order it ran the PUBLISHes, so a node's
/// own event comes back after everything published before it: a broadcast is ordered by
/// its echo. Each connection reconnects on its own with backoff (50 ms doubling to 2 s).
final class SingleRedisTransport: BusTransport, @unchecked Sendable {
    weak var delegate: (any BusTransportDelegate)?

    private let settings: RedisConnectionSettings
    private let nodeID: String
    private let loop: EventLoop
    private let logger: Logger
    private let metrics: GatewayMetrics

    private var publisher: RedisConnection?
    private var subscriber: RedisConnection?
    /// The topics of `start`, subscribed on every connect.
    private var baseTopics: [String] = []
    /// Those not confirmed yet on the current subscription.
    private var unconfirmedBase: Set<String> = []
    private var hearing = false
    /// The current connection's SUBSCRIBE went out (later topics go with `subscribe(more:)`).
    private var subscriptionSent = false
    /// Followed streams, subscribed again on every connect.
    private var followed: Set<String> = []
    private var publisherRetry = 0.05
    private var subscriberRetry = 0.05
    /// Tests: no publish connection before this (uptime ns).
    private var publisherHeldUntil: UInt64 = 0
    private var stopped = false

    init(settings: RedisConnectionSettings, nodeID: String, loop: EventLoop, logger: Logger, metrics: GatewayMetrics) {
        self.settings = settings
        self.nodeID = nodeID
        self.loop = loop
        self.logger = logger
        self.metrics = metrics
    }

    func start(broadcastTopics: [String], scriptTopics: [String]) {
        baseTopics = broadcastTopics + scriptTopics
        connectPublisher()
        connectSubscriber()
    }

    func stop() {
        stopped = true
        publisher?.close()
        subscriber?.close()
    }

    var canPublish: Bool { publisher?.isConnected == true }
    var isHearing: Bool { hearing }
    var broadcastIsOrderedByReply: Bool { false }

    func isWaiting(longerThan nanoseconds: UInt64) -> Bool {
        publisher?.isWaiting(longerThan: nanoseconds) ?? false
    }

    func send(_ arguments: [[UInt8]], key: [UInt8], reply: @escaping (RedisReply) -> Void) {
        guard let publisher else { return reply(.disconnected) }
        publisher.send(arguments, reply: reply)
    }

    func publish(_ payload: [UInt8], on topic: String, answered: @escaping (Bool) -> Void) {
        guard let publisher else { return answered(false) }
        publisher.send([Array("PUBLISH".utf8), Array(topic.utf8), payload]) { reply in answered(!reply.isFailure) }
    }

    func broadcast(_ payload: [UInt8], on topic: String, number: UInt64, answered: @escaping (Bool) -> Void) {
        publish(payload, on: topic, answered: answered)
    }

    func follow(_ topics: [String]) {
        let new = topics.filter { followed.insert($0).inserted }
        guard subscriptionSent, !new.isEmpty, let subscriber, subscriber.isConnected else { return }
        subscriber.subscribe(more: new)
    }

    func unfollow(_ topics: [String]) {
        let gone = topics.filter { followed.remove($0) != nil }
        guard !gone.isEmpty, let subscriber, subscriber.isConnected else { return }
        subscriber.unsubscribe(gone)
    }

    func abandonSubscription(_ reason: String) {
        subscriber?.abandon(reason)
        // Abandoning an unsubscribed connection reports nothing: the loss is said here.
        lost()
    }

    func holdPublisher(for duration: Duration) {
        publisherHeldUntil = DispatchTime.now().uptimeNanoseconds + duration.nanoseconds
        publisher?.close()
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
                delegate?.transportCanPublish()
            }
        }, closed: { [self] reason in
            publisher = nil
            delegate?.transportStoppedPublishing()
            retry(publisher: true, reason ?? "closed")
        })
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
            unconfirmedBase = Set(baseTopics)
            subscriptionSent = true
            subscriber?.subscribe(baseTopics + followed.sorted()) { [self] reply in
                handleSubscription(reply)
            }
        }, closed: { [self] reason in
            subscriber = nil
            lost()
            retry(publisher: false, reason ?? "closed")
        })
    }

    private func handleSubscription(_ reply: RedisReply) {
        switch reply {
        case .array(let parts) where parts.count == 3 && parts[0].text == "message":
            guard case .string(let message) = parts[2], let topic = parts[1].text else { return }
            delegate?.transportReceived(message, on: topic)
        case .array(let parts) where parts.count == 3 && parts[0].text == "subscribe":
            guard let topic = parts[1].text else { return }
            if unconfirmedBase.remove(topic) != nil {
                if unconfirmedBase.isEmpty && !hearing {
                    hearing = true
                    delegate?.transportHearing()
                }
            } else if followed.contains(topic) {
                delegate?.transportConfirmed(topic: topic)
            } else {
                // Unfollowed while its subscription was on its way.
                subscriber?.unsubscribe([topic])
            }
        case .disconnected:
            lost()
        default:
            break
        }
    }

    /// The subscription is gone (may be said twice for one loss: the bus takes it once).
    private func lost() {
        hearing = false
        subscriptionSent = false
        unconfirmedBase = []
        delegate?.transportLost(topics: followed.sorted(), hearing: false)
    }

    private func retry(publisher isPublisher: Bool, _ reason: String) {
        guard !stopped else { return }
        if reason.contains(RedisConnection.timeoutReason) { metrics.redisTimeouts.increment() }
        let delay = isPublisher ? publisherRetry : subscriberRetry
        if isPublisher { publisherRetry = min(publisherRetry * 2, 2) } else { subscriberRetry = min(subscriberRetry * 2, 2) }
        logger.warning("bus.reconnect", metadata: [
            "connection": "\(isPublisher ? "publish" : "subscribe")", "reason": "\(reason)",
            "retryMs": .stringConvertible(Int(delay * 1000)),
        ])
        let now = DispatchTime.now().uptimeNanoseconds
        let held = isPublisher && publisherHeldUntil > now ? publisherHeldUntil - now : 0
        loop.queue.asyncAfter(deadline: .now() + delay + .nanoseconds(Int(held))) { [self] in
            if isPublisher { connectPublisher() } else { connectSubscriber() }
        }
    }
}
