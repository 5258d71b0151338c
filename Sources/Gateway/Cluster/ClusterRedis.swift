import EventLoop
import Logging
import Redis

/// What a node's cluster parts share of its Redis (`ClusterBus`, `SharedRateLimit`,
/// `ClusterConnections`, `ClusterPresence`, `ClusterTyping`): the publish connection, the
/// loop everything runs on, the bus signature and the counting of bad input.
///
/// `ClusterBus` opens and reopens the connection (its ups and downs drive the bus's echo
/// waits and outbox); every part sends its commands on it, so a node's commands reach Redis
/// in one order on one connection, as the bus's ordering arguments assume
/// (docs/ARCHITECTURE.md, "Cluster mode"). The subscribed connection takes no other command
/// and stays the bus's own. `publisher` is used on `loop` only.
final class ClusterRedis: @unchecked Sendable {
    let nodeID: String
    let loop: EventLoop
    let settings: RedisConnectionSettings
    let signature: BusSignature?
    let logger: Logger
    let metrics: GatewayMetrics
    /// Every command but SUBSCRIBE; set and cleared by `ClusterBus`.
    var publisher: RedisConnection?

    init(settings: RedisConnectionSettings, signature: BusSignature?, nodeID: String, loop: EventLoop, logger: Logger,
         metrics: GatewayMetrics) {
        self.settings = settings
        self.signature = signature
        self.nodeID = nodeID
        self.loop = loop
        self.logger = logger
        self.metrics = metrics
    }

    /// The publish connection while it is up, nil otherwise.
    var connectedPublisher: RedisConnection? {
        guard let publisher, publisher.isConnected else { return nil }
        return publisher
    }

    /// How long a request's answer waits on Redis at one step (the shared rate, an event's
    /// echo): half the command timeout. A send waits at one of them at most (once one went
    /// unanswered this long, `ClusterBus.publish` does not wait for the echo), so with the
    /// store's write it is answered within the command timeout even when Redis stops; the
    /// connection itself is judged stuck only at the full timeout.
    var answerWaitNanoseconds: UInt64 { settings.commandTimeoutNanoseconds / 2 }

    /// `payload` as it goes on `channel`: signed when the bus has a secret.
    func seal(_ payload: [UInt8], channel: String) -> [UInt8] {
        signature?.signed(payload, channel: channel) ?? payload
    }

    /// A payload off `channel` once its signature holds (as is without a secret); nil,
    /// counted, when it does not.
    func unseal(_ message: [UInt8], channel: String) -> [UInt8]? {
        guard let signature else { return message }
        guard let payload = signature.verified(message, channel: channel) else {
            metrics.busPayloadsRejectedSignature.increment()
            logger.warning("bus.bad_signature", metadata: ["channel": "\(channel)"])
            return nil
        }
        return payload
    }

    /// Counts and logs input from `source` (a channel, a key) that broke `BusInputRules`.
    func rejectMalformed(_ source: String) {
        metrics.busPayloadsRejectedMalformed.increment()
        logger.warning("bus.bad_payload", metadata: ["source": "\(source)"])
    }
}
