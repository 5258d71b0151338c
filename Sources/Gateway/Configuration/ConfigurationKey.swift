/// One key of PROTOCOL.md §12: its dotted path, the JSON type its value must
/// have, and the environment variable that overrides it.
struct ConfigurationKey: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case string
        case integer
        case boolean
        case stringArray

        var expectation: String {
            switch self {
            case .string: "a string"
            case .integer: "an integer"
            case .boolean: "a boolean"
            case .stringArray: "an array of strings"
            }
        }
    }

    static let environmentPrefix = "CHAT_GATEWAY_"

    let path: String
    let kind: Kind
    let isSecret: Bool

    init(_ path: String, _ kind: Kind, isSecret: Bool = false) {
        self.path = path
        self.kind = kind
        self.isSecret = isSecret
    }

    /// `CHAT_GATEWAY_` + the path upper-cased with `.` → `_`, so `auth.jwtSecret`
    /// is `CHAT_GATEWAY_AUTH_JWTSECRET` (no underscore at the camel-case boundary).
    var environmentVariable: String {
        Self.environmentPrefix + path.uppercased().replacing(".", with: "_")
    }
}

extension ConfigurationKey {
    static let serverHost = ConfigurationKey("server.host", .string)
    static let serverPort = ConfigurationKey("server.port", .integer)
    static let serverAllowedOrigins = ConfigurationKey("server.allowedOrigins", .stringArray)
    static let serverEventLoops = ConfigurationKey("server.eventLoops", .integer)
    static let tlsCertificateFile = ConfigurationKey("tls.certificateFile", .string)
    static let tlsPrivateKeyFile = ConfigurationKey("tls.privateKeyFile", .string)
    static let tlsTicketKeyRotationSeconds = ConfigurationKey("tls.ticketKeyRotationSeconds", .integer)
    static let storageDataDirectory = ConfigurationKey("storage.dataDirectory", .string)
    static let storageSynchronous = ConfigurationKey("storage.synchronous", .string)
    static let storageBackend = ConfigurationKey("storage.backend", .string)
    /// May carry a password.
    static let storagePostgresURL = ConfigurationKey("storage.postgresUrl", .string, isSecret: true)
    static let authJWTSecret = ConfigurationKey("auth.jwtSecret", .string, isSecret: true)
    static let adminAPIKey = ConfigurationKey("admin.apiKey", .string, isSecret: true)
    static let blockingMode = ConfigurationKey("blocking.mode", .string)
    static let blockingRevealBlockedBy = ConfigurationKey("blocking.revealBlockedBy", .boolean)
    static let blockingExcludeFromInvitations = ConfigurationKey("blocking.excludeFromInvitations", .boolean)
    static let limitsUserMessagesPerSecond = ConfigurationKey("limits.userMessagesPerSecond", .integer)
    static let limitsUserMessageBurst = ConfigurationKey("limits.userMessageBurst", .integer)
    static let limitsUserChangesPerSecond = ConfigurationKey("limits.userChangesPerSecond", .integer)
    static let limitsUserChangeBurst = ConfigurationKey("limits.userChangeBurst", .integer)
    static let limitsReactionEventWindowMs = ConfigurationKey("limits.reactionEventWindowMs", .integer)
    static let limitsTypingListAboveMembers = ConfigurationKey("limits.typingListAboveMembers", .integer)
    static let limitsOpenChannelMessagesPerSecond = ConfigurationKey("limits.openChannelMessagesPerSecond", .integer)
    static let limitsMaxConnectionsPerUser = ConfigurationKey("limits.maxConnectionsPerUser", .integer)
    static let limitsMaxTextLength = ConfigurationKey("limits.maxTextLength", .integer)
    static let limitsMaxMessageBytes = ConfigurationKey("limits.maxMessageBytes", .integer)
    static let limitsMaxQueuedOutputBytes = ConfigurationKey("limits.maxQueuedOutputBytes", .integer)
    static let limitsSlowConsumerSeconds = ConfigurationKey("limits.slowConsumerSeconds", .integer)
    static let limitsConnectionRequestsPerSecond = ConfigurationKey("limits.connectionRequestsPerSecond", .integer)
    static let limitsConnectionRequestBurst = ConfigurationKey("limits.connectionRequestBurst", .integer)
    static let limitsMaxRequestsInFlight = ConfigurationKey("limits.maxRequestsInFlight", .integer)
    static let limitsHandshakeTimeoutSeconds = ConfigurationKey("limits.handshakeTimeoutSeconds", .integer)
    static let limitsHandshakesAtOnce = ConfigurationKey("limits.handshakesAtOnce", .integer)
    static let limitsIdleTimeoutSeconds = ConfigurationKey("limits.idleTimeoutSeconds", .integer)
    static let limitsPongTimeoutSeconds = ConfigurationKey("limits.pongTimeoutSeconds", .integer)
    static let limitsCloseTimeoutSeconds = ConfigurationKey("limits.closeTimeoutSeconds", .integer)
    static let pushSink = ConfigurationKey("push.sink", .string)
    static let pushFile = ConfigurationKey("push.file", .string)
    static let pushWebhookURL = ConfigurationKey("push.webhookUrl", .string)
    static let logLevel = ConfigurationKey("log.level", .string)
    static let shutdownDrainSeconds = ConfigurationKey("shutdown.drainSeconds", .integer)
    static let conformanceEcho = ConfigurationKey("conformance.echo", .boolean)
    static let metricsAPIKey = ConfigurationKey("metrics.apiKey", .string, isSecret: true)
    /// May carry a password.
    static let clusterRedisURL = ConfigurationKey("cluster.redisUrl", .string, isSecret: true)
    static let clusterNodeID = ConfigurationKey("cluster.nodeId", .string)
    static let clusterRedisCAFile = ConfigurationKey("cluster.redisCaFile", .string)
    static let clusterCommandTimeoutMs = ConfigurationKey("cluster.commandTimeoutMs", .integer)
    static let clusterFollowGraceMs = ConfigurationKey("cluster.followGraceMs", .integer)
    static let clusterBusSecret = ConfigurationKey("cluster.busSecret", .string, isSecret: true)
    static let consoleEnabled = ConfigurationKey("console.enabled", .boolean)

    static let all: [ConfigurationKey] = [
        .serverHost, .serverPort, .serverAllowedOrigins, .serverEventLoops,
        .tlsCertificateFile, .tlsPrivateKeyFile, .tlsTicketKeyRotationSeconds,
        .storageDataDirectory, .storageSynchronous, .storageBackend, .storagePostgresURL,
        .authJWTSecret,
        .adminAPIKey,
        .blockingMode, .blockingRevealBlockedBy, .blockingExcludeFromInvitations,
        .limitsUserMessagesPerSecond, .limitsUserMessageBurst, .limitsOpenChannelMessagesPerSecond,
        .limitsUserChangesPerSecond, .limitsUserChangeBurst, .limitsReactionEventWindowMs, .limitsTypingListAboveMembers,
        .limitsMaxConnectionsPerUser, .limitsMaxTextLength, .limitsMaxMessageBytes,
        .limitsMaxQueuedOutputBytes, .limitsSlowConsumerSeconds,
        .limitsConnectionRequestsPerSecond, .limitsConnectionRequestBurst, .limitsMaxRequestsInFlight,
        .limitsHandshakeTimeoutSeconds, .limitsHandshakesAtOnce, .limitsIdleTimeoutSeconds,
        .limitsPongTimeoutSeconds, .limitsCloseTimeoutSeconds,
        .pushSink, .pushFile, .pushWebhookURL,
        .logLevel,
        .shutdownDrainSeconds,
        .conformanceEcho,
        .metricsAPIKey, .clusterRedisURL, .clusterNodeID, .clusterRedisCAFile, .clusterCommandTimeoutMs, .clusterFollowGraceMs,
        .clusterBusSecret,
        .consoleEnabled,
    ]

    static let byPath: [String: ConfigurationKey] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.path, $0) }
    )

    static let byEnvironmentVariable: [String: ConfigurationKey] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.environmentVariable, $0) }
    )

    /// Every proper prefix of a key path (`server`, `limits`, …): the JSON
    /// objects a configuration file may contain.
    static let sections: Set<String> = Set(all.flatMap { key in
        let components = key.path.split(separator: ".")
        return (1..<components.count).map { components[..<$0].joined(separator: ".") }
    })
}
