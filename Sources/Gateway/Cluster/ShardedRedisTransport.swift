import Dispatch
import EventLoop
import Logging
import Redis

/// The bus on a Redis Cluster (`cluster.redisUrl` naming several seeds): commands go to
/// the master of their key's slot and a channel's stream is SPUBLISHed to the master of
/// its channel's slot (`RedisClusterClient`), so each master carries the channels it owns
/// and a node hears only the streams it follows.
///
/// What every node must hear (`chat:bus`, `chat:resync`) is broadcast: SPUBLISHed on one
/// `RedisShardBroadcast` channel of every master, each copy in an envelope that names its
/// topic, its origin (this node's incarnation) and its number; every node subscribes to
/// all broadcast channels and keeps the first copy (`RedisBroadcastCopies`). A broadcast
/// is ordered once every master took it: on each master it is then ahead of whatever that
/// master publishes later, and a node hears a master's channels on one connection, so a
/// block's reply precedes every later message of the blocked user on every node
/// (docs/ARCHITECTURE.md, "Cluster mode on a Redis Cluster").
///
/// Presence changes are PUBLISHed by Redis's scripts, which Redis Cluster delivers to the
/// plain subscribers of every node: one plain SUBSCRIBE connection, to any master, hears
/// them.
final class ShardedRedisTransport: BusTransport, @unchecked Sendable {
    weak var delegate: (any BusTransportDelegate)?

    static let broadcastPrefix = "chat:bc"

    private let settings: RedisClusterSettings
    private let nodeID: String
    /// This run of the node: numbers start again at every start.
    private let origin: String
    private let loop: EventLoop
    private let logger: Logger
    private let metrics: GatewayMetrics
    private let shards = RedisShardBroadcast(prefix: ShardedRedisTransport.broadcastPrefix)
    private let shardChannels: Set<String>

    private var client: RedisClusterClient?
    private var copies = RedisBroadcastCopies()
    private var broadcastTopics: Set<String> = []
    private var scriptTopics: [String] = []
    /// Broadcast channels whose subscription Redis confirmed.
    private var confirmedShards: Set<String> = []
    /// Followed streams; the client keeps them subscribed wherever their slot is.
    private var followed: Set<String> = []
    /// Followed streams lost and not confirmed again yet: the bus is whole once they are.
    private var recovering: Set<String> = []
    /// The plain subscription to `scriptTopics`, on one master.
    private var scriptSubscriber: RedisConnection?
    private var scriptTopicsConfirmed: Set<String> = []
    private var scriptRetry = 0.05
    private var scriptNodeRotation = 0
    /// `transportHearing` was said since the last loss.
    private var announcedWhole = false
    private var held = false
    private var stopped = false
    private var warnedUncovered = false

    init(settings: RedisClusterSettings, nodeID: String, loop: EventLoop, logger: Logger, metrics: GatewayMetrics) {
        self.settings = settings
        self.nodeID = nodeID
        self.loop = loop
        self.logger = logger
        self.metrics = metrics
        origin = nodeID + "/" + String(UInt64.random(in: 1...UInt64.max), radix: 36)
        shardChannels = Set(shards.channels)
    }

    func start(broadcastTopics: [String], scriptTopics: [String]) {
        self.broadcastTopics = Set(broadcastTopics)
        self.scriptTopics = scriptTopics
        var settings = self.settings
        settings.node.clientName = nodeID
        let client = RedisClusterClient(settings: settings, loop: loop) { [weak self] failure in
            guard let self, let failure else { return }
            logger.warning("bus.cluster_unreachable", metadata: ["reason": "\(failure)"])
        }
        client.onMessage = { [weak self] channel, payload in self?.received(payload, on: channel) }
        client.onSubscribed = { [weak self] channel in self?.confirmed(channel) }
        client.onSubscriptionLost = { [weak self] channels, reason in self?.lost(channels, reason: reason) }
        client.onTopology = { [weak self] topology in self?.topologyRead(topology) }
        self.client = client
        client.ssubscribe(shards.channels)
    }

    func stop() {
        stopped = true
        client?.close()
        scriptSubscriber?.close()
    }

    var canPublish: Bool { !held && client?.topology != nil }
    /// Every broadcast channel and script topic is subscribed.
    var isHearing: Bool {
        confirmedShards.count == shardChannels.count && scriptTopicsConfirmed.count == scriptTopics.count
    }
    var broadcastIsOrderedByReply: Bool { true }

    func isWaiting(longerThan nanoseconds: UInt64) -> Bool {
        client?.isWaiting(longerThan: nanoseconds) ?? false
    }

    func send(_ arguments: [[UInt8]], key: [UInt8], reply: @escaping (RedisReply) -> Void) {
        guard !held, let client else { return reply(.disconnected) }
        client.send(arguments, key: key, reply: reply)
    }

    func publish(_ payload: [UInt8], on topic: String, answered: @escaping (Bool) -> Void) {
        guard !held, let client else { return answered(false) }
        client.spublish(topic, payload) { reply in answered(!reply.isFailure) }
    }

    func broadcast(_ payload: [UInt8], on topic: String, number: UInt64, answered: @escaping (Bool) -> Void) {
        guard !held, let client, let topology = client.topology else { return answered(false) }
        let (channels, uncovered) = shards.channels(oneForEachMasterOf: topology)
        if !uncovered.isEmpty && !warnedUncovered {
            warnedUncovered = true
            logger.warning("bus.broadcast_uncovered", metadata: ["masters": "\(uncovered)"])
        }
        guard !channels.isEmpty else { return answered(false) }
        let envelope = BroadcastEnvelope(topic: topic, origin: origin, number: number, payload: payload).encoded()
        var replies = 0
        var failed = false
        for channel in channels {
            client.spublish(channel, envelope) { reply in
                replies += 1
                if reply.isFailure { failed = true }
                if replies == channels.count { answered(!failed) }
            }
        }
    }

    func follow(_ topics: [String]) {
        let new = topics.filter { followed.insert($0).inserted }
        client?.ssubscribe(new)
    }

    func unfollow(_ topics: [String]) {
        let gone = topics.filter { followed.remove($0) != nil }
        for topic in gone { recovering.remove(topic) }
        client?.sunsubscribe(gone)
        checkWhole()
    }

    func abandonSubscription(_ reason: String) {
        client?.abandonSubscriptions(reason)
        scriptSubscriber?.abandon(reason)
    }

    func holdPublisher(for duration: Duration) {
        held = true
        delegate?.transportStoppedPublishing()
        loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: duration.nanoseconds))) { [self] in
            held = false
            delegate?.transportCanPublish()
        }
    }

    // MARK: what the client says

    private func received(_ message: [UInt8], on channel: String) {
        guard shardChannels.contains(channel) else {
            delegate?.transportReceived(message, on: channel)
            return
        }
        guard let envelope = BroadcastEnvelope.decode(message), broadcastTopics.contains(envelope.topic) else {
            metrics.busPayloadsRejectedMalformed.increment()
            logger.warning("bus.bad_payload", metadata: ["source": "\(channel)"])
            return
        }
        guard copies.isFirst(origin: envelope.origin, number: envelope.number) else { return }
        delegate?.transportReceived(envelope.payload, on: envelope.topic)
    }

    private func confirmed(_ channel: String) {
        if shardChannels.contains(channel) {
            confirmedShards.insert(channel)
        } else if followed.contains(channel) {
            recovering.remove(channel)
            delegate?.transportConfirmed(topic: channel)
        }
        checkWhole()
    }

    private func lost(_ channels: [String], reason: String) {
        logger.error("bus.subscription_lost", metadata: ["node": "\(nodeID)", "channels": .stringConvertible(channels.count),
                                                         "reason": "\(reason)"])
        var streams: [String] = []
        for channel in channels {
            if confirmedShards.remove(channel) != nil { continue }
            if followed.contains(channel) {
                streams.append(channel)
                recovering.insert(channel)
            }
        }
        announcedWhole = false
        delegate?.transportLost(topics: streams, hearing: isHearing)
        checkWhole()
    }

    private func topologyRead(_ topology: RedisClusterTopology) {
        if scriptSubscriber == nil { connectScriptSubscriber() }
        if !held { delegate?.transportCanPublish() }
    }

    /// Hearing once every broadcast channel and script topic is subscribed; whole (the bus
    /// is told, and resyncs what it may have missed) once the lost streams are back too.
    private func checkWhole() {
        guard isHearing, recovering.isEmpty, !announcedWhole else { return }
        announcedWhole = true
        delegate?.transportHearing()
    }

    // MARK: the script topics' plain subscription

    private func connectScriptSubscriber() {
        guard !stopped, let client else { return }
        let nodes = client.topology?.masters.map(\.address)
            ?? settings.seeds.map { RedisClusterAddress(host: $0.host, port: $0.port) }
        guard !nodes.isEmpty else { return }
        let address = nodes[scriptNodeRotation % nodes.count]
        scriptNodeRotation &+= 1
        var settings = self.settings.connection(to: address)
        settings.clientName = nodeID + "-subscribe"
        scriptTopicsConfirmed = []
        scriptSubscriber = RedisConnection(settings: settings, loop: loop, connected: { [self] failure in
            if let failure {
                scriptSubscriber = nil
                retryScriptSubscriber(failure)
                return
            }
            scriptRetry = 0.05
            scriptSubscriber?.subscribe(scriptTopics) { [self] reply in
                switch reply {
                case .array(let parts) where parts.count == 3 && parts[0].text == "message":
                    guard case .string(let message) = parts[2], let topic = parts[1].text else { return }
                    delegate?.transportReceived(message, on: topic)
                case .array(let parts) where parts.count == 3 && parts[0].text == "subscribe":
                    if let topic = parts[1].text { scriptTopicsConfirmed.insert(topic) }
                    checkWhole()
                default:
                    break
                }
            }
        }, closed: { [self] reason in
            scriptSubscriber = nil
            if !scriptTopicsConfirmed.isEmpty {
                scriptTopicsConfirmed = []
                announcedWhole = false
                delegate?.transportLost(topics: [], hearing: false)
            }
            retryScriptSubscriber(reason ?? "closed")
        })
    }

    private func retryScriptSubscriber(_ reason: String) {
        guard !stopped else { return }
        let delay = scriptRetry
        scriptRetry = min(scriptRetry * 2, 2)
        logger.warning("bus.reconnect", metadata: ["connection": "subscribe", "reason": "\(reason)",
                                                   "retryMs": .stringConvertible(Int(delay * 1000))])
        loop.queue.asyncAfter(deadline: .now() + delay) { [self] in connectScriptSubscriber() }
    }
}

/// A broadcast copy as it goes on a `RedisShardBroadcast` channel:
/// `<topic>\n<origin>\n<number>\n<payload>` (the payload as the bus sealed it for its topic).
struct BroadcastEnvelope: Equatable {
    var topic: String
    var origin: String
    var number: UInt64
    var payload: [UInt8]

    func encoded() -> [UInt8] {
        Array("\(topic)\n\(origin)\n\(number)\n".utf8) + payload
    }

    static func decode(_ bytes: [UInt8]) -> BroadcastEnvelope? {
        let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].count <= 64, parts[1].count <= 256, parts[2].count <= 20,
              let number = UInt64(String(decoding: parts[2], as: UTF8.self)) else { return nil }
        return BroadcastEnvelope(topic: String(decoding: parts[0], as: UTF8.self),
                                 origin: String(decoding: parts[1], as: UTF8.self), number: number,
                                 payload: Array(parts[3]))
    }
}
