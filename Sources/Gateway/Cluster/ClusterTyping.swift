import ChatCore
import EventLoop
import Redis

/// Typing changes between nodes on `chat:typing` (`TypingRelay`): not ordered with the
/// bus's writes and not kept when Redis cannot take them (typing is not worth an outbox:
/// it is stale within seconds).
struct ClusterTyping: Sendable {
    static let channel = "chat:typing"

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
            guard let publisher = redis.connectedPublisher else { return }
            let payload = redis.seal(TypingRelay(node: redis.nodeID, started: started, channelID: channel, userID: user).encoded(),
                                     channel: Self.channel)
            publisher.send([Array("PUBLISH".utf8), Array(Self.channel.utf8), payload]) { _ in }
        }
    }

    /// A message off `chat:typing` (on the loop): checked, and handed on unless this node
    /// sent it.
    func received(_ message: [UInt8]) {
        guard let payload = redis.unseal(message, channel: Self.channel) else { return }
        guard let relay = TypingRelay.decode(payload) else {
            redis.rejectMalformed(Self.channel)
            return
        }
        if relay.node != redis.nodeID { relayed(relay) }
    }
}
