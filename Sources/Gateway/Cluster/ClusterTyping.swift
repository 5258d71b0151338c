import ChatCore
import EventLoop
import Redis

/// Typing changes between nodes (`TypingRelay`), on the stream of the chat channel typed
/// in (`chat:ch:<id>`), so only the nodes that follow the channel (those with a member of
/// it) hear them. Not ordered with the bus's writes and not kept when Redis cannot take
/// them (typing is not worth an outbox: it is stale within seconds). `chat:typing`, where
/// every node heard every change, is still heard, for nodes of an older version during a
/// rolling upgrade.
struct ClusterTyping: Sendable {
    static let channel = "chat:typing"

    /// Whether a payload off a channel's stream is a typing change (its JSON begins with
    /// `node`, a bus event's with `v`).
    static func isRelay(_ payload: [UInt8]) -> Bool {
        payload.starts(with: relayPrefix)
    }

    private static let relayPrefix = Array(#"{"node":"#.utf8)

    private let redis: ClusterRedis
    /// Another node's typing change (called on the loop).
    private let relayed: @Sendable (TypingRelay) -> Void

    init(redis: ClusterRedis, relayed: @escaping @Sendable (TypingRelay) -> Void) {
        self.redis = redis
        self.relayed = relayed
    }

    /// Tells the other nodes of a typing change; dropped when Redis cannot take it.
    func relay(started: Bool, channel: ChannelID, user: UserID) {
        redis.loop.execute { [redis] in
            guard redis.canSend else { return }
            let topic = ClusterBus.topic(of: channel)
            let payload = redis.seal(TypingRelay(node: redis.nodeID, started: started, channelID: channel, userID: user).encoded(),
                                     channel: topic)
            redis.transport.publish(payload, on: topic) { _ in }
        }
    }

    /// A message off `chat:typing` (on the loop): checked, and handed on unless this node
    /// sent it.
    func received(_ message: [UInt8]) {
        guard let payload = redis.unseal(message, channel: Self.channel) else { return }
        received(payload: payload, on: Self.channel)
    }

    /// A typing change already unsealed, off `topic` (a channel's stream or `chat:typing`):
    /// checked, and handed on unless this node sent it. One off a stream must be about
    /// that stream's channel.
    func received(payload: [UInt8], on topic: String) {
        guard let relay = TypingRelay.decode(payload),
              topic == Self.channel || topic == ClusterBus.topic(of: relay.channelID)
        else {
            redis.rejectMalformed(topic)
            return
        }
        redis.metrics.busTypingIn.increment()
        if relay.node != redis.nodeID { relayed(relay) }
    }
}
