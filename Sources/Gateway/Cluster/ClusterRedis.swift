import EventLoop
import Logging
import Redis

/// What a node's cluster parts share of its Redis (`ClusterBus`, `SharedRateLimit`,
/// `ClusterConnections`, `ClusterPresence`, `ClusterTyping`): the transport every command
/// goes through, the loop everything runs on, the bus signature and the counting of bad
/// input.
///
/// `ClusterBus` starts the transport and follows its ups and downs (they drive the bus's
/// echo waits and outbox); every part sends its commands through it. On one Redis they all
/// go on one connection in one order; on a Redis Cluster each goes to the master of its
/// key's slot, and every key a script touches shares one slot (`UserHashTag`,
/// `{chat:online}`), as the bus's ordering arguments assume (docs/ARCHITECTURE.md,
/// "Cluster mode"). Used on `loop` only.
final class ClusterRedis: @unchecked Sendable {
    let nodeID: String
    let loop: EventLoop
    /// What every connection to Redis shares (a Redis Cluster's: each node's).
    let settings: RedisConnectionSettings
    let signature: BusSignature?
    let logger: Logger
    let metrics: GatewayMetrics
    let transport: any BusTransport

    init(transport: any BusTransport, settings: RedisConnectionSettings, signature: BusSignature?, nodeID: String,
         loop: EventLoop, logger: Logger, metrics: GatewayMetrics) {
        self.transport = transport
        self.settings = settings
        self.signature = signature
        self.nodeID = nodeID
        self.loop = loop
        self.logger = logger
        self.metrics = metrics
    }

    /// Whether commands can go now.
    var canSend: Bool { transport.canPublish }

    /// Sends one command to the Redis holding `key` (on the loop); `reply` runs once, with
    /// `.disconnected` when commands cannot go now.
    func send(_ arguments: [String], key: String, reply: @escaping (RedisReply) -> Void = { _ in }) {
        guard transport.canPublish else { return reply(.disconnected) }
        transport.send(arguments.map { Array($0.utf8) }, key: Array(key.utf8), reply: reply)
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
