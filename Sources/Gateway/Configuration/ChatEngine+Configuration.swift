import ChatCore

extension ChatEngine.Settings {
    /// The engine's part of the configuration: blocking (§5), the message and connection
    /// limits it decides (§6); in cluster mode (a Redis URL) the per-user rate is shared.
    init(_ configuration: GatewayConfiguration) {
        self.init(blockingMode: configuration.blocking.mode, revealBlockedBy: configuration.blocking.revealBlockedBy,
                  excludeFromInvitations: configuration.blocking.excludeFromInvitations,
                  maxTextLength: configuration.limits.maxTextLength,
                  userMessagesPerSecond: configuration.limits.userMessagesPerSecond,
                  userMessageBurst: configuration.limits.userMessageBurst,
                  openChannelMessagesPerSecond: configuration.limits.openChannelMessagesPerSecond,
                  sharedUserRate: configuration.cluster.redisURL != nil,
                  maxConnectionsPerUser: configuration.limits.maxConnectionsPerUser,
                  userChangesPerSecond: configuration.limits.userChangesPerSecond,
                  userChangeBurst: configuration.limits.userChangeBurst,
                  reactionEventWindowMilliseconds: Milliseconds(configuration.limits.reactionEventWindowMs),
                  typingListAboveMembers: configuration.limits.typingListAboveMembers,
                  followGraceMilliseconds: configuration.cluster.redisURL == nil
                      ? nil : Milliseconds(configuration.cluster.followGraceMs))
    }
}
