import Logging

extension GatewayConfiguration {
    /// Defaults, overridden by the JSON file at `filePath` (when given),
    /// overridden by `CHAT_GATEWAY_*` variables in `environment`; then validated.
    /// Pass `ProcessInfo.processInfo.environment` in production.
    public static func load(
        filePath: String?,
        environment: [String: String]
    ) throws(ConfigurationError) -> GatewayConfiguration {
        var file: ConfigurationFile?
        if let filePath {
            file = try ConfigurationFile(path: filePath)
        }
        let sources = try ConfigurationSources(file: file, environment: environment)
        let configuration = try GatewayConfiguration(reading: sources)
        try configuration.validate()
        return configuration
    }

    init(reading sources: ConfigurationSources) throws(ConfigurationError) {
        self.init()
        try readNetwork(from: sources)
        storage.dataDirectory = try sources.string(.storageDataDirectory) ?? storage.dataDirectory
        storage.synchronous = try sources.choice(.storageSynchronous, as: Storage.Synchronous.self) ?? storage.synchronous
        storage.backend = try sources.choice(.storageBackend, as: Storage.Backend.self) ?? storage.backend
        storage.postgresURL = try sources.string(.storagePostgresURL) ?? storage.postgresURL
        auth.jwtSecret = try sources.string(.authJWTSecret) ?? auth.jwtSecret
        admin.apiKey = try sources.string(.adminAPIKey) ?? admin.apiKey
        let mode = try sources.choice(.blockingMode, as: Blocking.Mode.self) ?? .standard
        blocking = Blocking(
            mode: mode,
            revealBlockedBy: try sources.bool(.blockingRevealBlockedBy),
            excludeFromInvitations: try sources.bool(.blockingExcludeFromInvitations) ?? false
        )
        try readLimits(from: sources)
        push.sink = try sources.choice(.pushSink) ?? push.sink
        push.file = try sources.optionalString(.pushFile)
        push.webhookUrl = try sources.optionalString(.pushWebhookURL)
        log.level = try sources.choice(.logLevel, as: Logger.Level.self) ?? log.level
        shutdown.drainSeconds = try sources.int(.shutdownDrainSeconds) ?? shutdown.drainSeconds
        conformance.echo = try sources.bool(.conformanceEcho) ?? conformance.echo
        metrics.apiKey = try sources.optionalString(.metricsAPIKey)
        cluster.redisURL = try sources.optionalString(.clusterRedisURL)
        cluster.nodeID = try sources.optionalString(.clusterNodeID)
        cluster.redisCAFile = try sources.optionalString(.clusterRedisCAFile)
        cluster.commandTimeoutMs = try sources.int(.clusterCommandTimeoutMs) ?? cluster.commandTimeoutMs
        cluster.followGraceMs = try sources.int(.clusterFollowGraceMs) ?? cluster.followGraceMs
        cluster.busSecret = try sources.optionalString(.clusterBusSecret)
        console.enabled = try sources.bool(.consoleEnabled) ?? console.enabled
    }

    private mutating func readNetwork(from sources: ConfigurationSources) throws(ConfigurationError) {
        server.host = try sources.string(.serverHost) ?? server.host
        server.port = try sources.int(.serverPort) ?? server.port
        server.allowedOrigins = try sources.stringArray(.serverAllowedOrigins) ?? server.allowedOrigins
        server.eventLoops = try sources.int(.serverEventLoops) ?? server.eventLoops
        tls.certificateFile = try sources.optionalString(.tlsCertificateFile)
        tls.privateKeyFile = try sources.optionalString(.tlsPrivateKeyFile)
        tls.ticketKeyRotationSeconds = try sources.int(.tlsTicketKeyRotationSeconds) ?? tls.ticketKeyRotationSeconds
    }

    private mutating func readLimits(from sources: ConfigurationSources) throws(ConfigurationError) {
        for (key, field) in Limits.keyedFields {
            if let value = try sources.int(key) {
                limits[keyPath: field] = value
            }
        }
    }
}
