extension GatewayConfiguration {
    /// Throttling, size and timing limits (PROTOCOL.md §6). All must be positive; 0 turns a message rate off.
    public struct Limits: Sendable, Equatable {
        public var userMessagesPerSecond: Int
        public var userMessageBurst: Int
        /// Edits, deletes and reactions per user across its connections (§15).
        public var userChangesPerSecond: Int
        public var userChangeBurst: Int
        /// How long a message's reaction events are held back after one went out (0: none).
        public var reactionEventWindowMs: Int
        /// Channels with more members than this hear who types as one `typing.users` list per
        /// channel and half second instead of each typist's start and stop (0: never).
        public var typingListAboveMembers: Int
        public var openChannelMessagesPerSecond: Int
        public var maxConnectionsPerUser: Int
        /// In characters of a message's `text`.
        public var maxTextLength: Int
        /// Largest frame or reassembled message; larger closes with 1009.
        public var maxMessageBytes: Int
        /// Output the kernel refused beyond this, for `slowConsumerSeconds`, closes the
        /// connection with 4000 (at once past four times this).
        public var maxQueuedOutputBytes: Int
        public var slowConsumerSeconds: Int
        /// Requests of any type per connection; 0 turns the budget off.
        public var connectionRequestsPerSecond: Int
        public var connectionRequestBurst: Int
        /// Requests per connection handed to the core and not yet answered.
        public var maxRequestsInFlight: Int
        public var handshakeTimeoutSeconds: Int
        /// Connections of one event loop in their opening handshake (TLS, the upgrade) at
        /// once; a connection takes a turn once its ClientHello or request head is complete, and
        /// waits for that and for a turn (its bytes held, unprocessed) up to `handshakeTimeoutSeconds`.
        public var handshakesAtOnce: Int
        /// Silence after which the gateway sends a ping.
        public var idleTimeoutSeconds: Int
        /// Time after that ping within which a pong must arrive.
        public var pongTimeoutSeconds: Int
        /// Time to wait for the peer's close frame before dropping the socket.
        public var closeTimeoutSeconds: Int

        public init(
            userMessagesPerSecond: Int = 5,
            userMessageBurst: Int = 5,
            userChangesPerSecond: Int = 10,
            userChangeBurst: Int = 10,
            reactionEventWindowMs: Int = 100,
            typingListAboveMembers: Int = 100,
            openChannelMessagesPerSecond: Int = 5,
            maxConnectionsPerUser: Int = 30,
            maxTextLength: Int = 5000,
            maxMessageBytes: Int = 65536,
            maxQueuedOutputBytes: Int = 4_194_304,
            slowConsumerSeconds: Int = 3,
            connectionRequestsPerSecond: Int = 50,
            connectionRequestBurst: Int = 100,
            maxRequestsInFlight: Int = 64,
            handshakeTimeoutSeconds: Int = 10,
            handshakesAtOnce: Int = 64,
            idleTimeoutSeconds: Int = 60,
            pongTimeoutSeconds: Int = 30,
            closeTimeoutSeconds: Int = 5
        ) {
            self.userMessagesPerSecond = userMessagesPerSecond
            self.userMessageBurst = userMessageBurst
            self.userChangesPerSecond = userChangesPerSecond
            self.userChangeBurst = userChangeBurst
            self.reactionEventWindowMs = reactionEventWindowMs
            self.typingListAboveMembers = typingListAboveMembers
            self.openChannelMessagesPerSecond = openChannelMessagesPerSecond
            self.maxConnectionsPerUser = maxConnectionsPerUser
            self.maxTextLength = maxTextLength
            self.maxMessageBytes = maxMessageBytes
            self.maxQueuedOutputBytes = maxQueuedOutputBytes
            self.slowConsumerSeconds = slowConsumerSeconds
            self.connectionRequestsPerSecond = connectionRequestsPerSecond
            self.connectionRequestBurst = connectionRequestBurst
            self.maxRequestsInFlight = maxRequestsInFlight
            self.handshakeTimeoutSeconds = handshakeTimeoutSeconds
            self.handshakesAtOnce = handshakesAtOnce
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.pongTimeoutSeconds = pongTimeoutSeconds
            self.closeTimeoutSeconds = closeTimeoutSeconds
        }
    }
}

extension GatewayConfiguration.Limits {
    /// Rate limits that 0 turns off (for benchmarks and trusted backends).
    static let zeroTurnsOff: Set<String> = [
        ConfigurationKey.limitsUserMessagesPerSecond.path, ConfigurationKey.limitsOpenChannelMessagesPerSecond.path,
        ConfigurationKey.limitsConnectionRequestsPerSecond.path, ConfigurationKey.limitsUserChangesPerSecond.path,
        ConfigurationKey.limitsReactionEventWindowMs.path, ConfigurationKey.limitsTypingListAboveMembers.path,
    ]

    /// Each limit with its key, for reading and for the positivity check.
    static var keyedFields: [(ConfigurationKey, WritableKeyPath<Self, Int>)] {
        [
            (.limitsUserMessagesPerSecond, \.userMessagesPerSecond),
            (.limitsUserMessageBurst, \.userMessageBurst),
            (.limitsUserChangesPerSecond, \.userChangesPerSecond),
            (.limitsUserChangeBurst, \.userChangeBurst),
            (.limitsReactionEventWindowMs, \.reactionEventWindowMs),
            (.limitsTypingListAboveMembers, \.typingListAboveMembers),
            (.limitsOpenChannelMessagesPerSecond, \.openChannelMessagesPerSecond),
            (.limitsMaxConnectionsPerUser, \.maxConnectionsPerUser),
            (.limitsMaxTextLength, \.maxTextLength),
            (.limitsMaxMessageBytes, \.maxMessageBytes),
            (.limitsMaxQueuedOutputBytes, \.maxQueuedOutputBytes),
            (.limitsSlowConsumerSeconds, \.slowConsumerSeconds),
            (.limitsConnectionRequestsPerSecond, \.connectionRequestsPerSecond),
            (.limitsConnectionRequestBurst, \.connectionRequestBurst),
            (.limitsMaxRequestsInFlight, \.maxRequestsInFlight),
            (.limitsHandshakeTimeoutSeconds, \.handshakeTimeoutSeconds),
            (.limitsHandshakesAtOnce, \.handshakesAtOnce),
            (.limitsIdleTimeoutSeconds, \.idleTimeoutSeconds),
            (.limitsPongTimeoutSeconds, \.pongTimeoutSeconds),
            (.limitsCloseTimeoutSeconds, \.closeTimeoutSeconds),
        ]
    }
}
