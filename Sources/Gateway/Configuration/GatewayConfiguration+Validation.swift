import Foundation
import PostgresStorage
import Redis

extension GatewayConfiguration {
    /// Range and cross-key checks; the first failure is thrown.
    /// `fileExists` decides whether a TLS file is present (injectable for tests).
    public func validate(
        fileExists: (String) -> Bool = GatewayConfiguration.isRegularFile
    ) throws(ConfigurationError) {
        try Self.require(!server.host.isEmpty, .serverHost, "must not be empty")
        try Self.require((0...65535).contains(server.port), .serverPort, "\(server.port) is out of range 0...65535")
        let loops = 1...Server.maximumEventLoops
        try Self.require(loops.contains(server.eventLoops), .serverEventLoops, "\(server.eventLoops) is out of range \(loops)")
        for (key, field) in Limits.keyedFields {
            let value = limits[keyPath: field]
            if Limits.zeroTurnsOff.contains(key.path) {
                try Self.require(value >= 0, key, "\(value) must be positive, or 0 to turn the limit off")
            } else {
                try Self.require(value > 0, key, "\(value) must be positive")
            }
        }
        try Self.require((0...86_400).contains(tls.ticketKeyRotationSeconds), .tlsTicketKeyRotationSeconds,
                         "\(tls.ticketKeyRotationSeconds) is out of range 0...86400 (0 turns session tickets off)")
        try Self.require(shutdown.drainSeconds >= 0, .shutdownDrainSeconds, "\(shutdown.drainSeconds) must not be negative")
        try Self.require(!storage.dataDirectory.isEmpty, .storageDataDirectory, "must not be empty")
        if let url = cluster.redisURL {
            // One URL names a Redis; a comma-separated list, the seed nodes of a Redis Cluster.
            let endpoint: RedisEndpoint
            do throws(RedisEndpoint.ParseError) {
                endpoint = try RedisEndpoint.parseOneOrSeeds(url)[0]
            } catch {
                // The parse error names the part that is wrong, never the URL (it may hold a password).
                throw .invalidValue(key: ConfigurationKey.clusterRedisURL.path,
                                    problem: "\(error) (redis://[[user]:password@]host[:port][/db] or rediss://…, host an IP "
                                        + "address; a Redis Cluster: its seed nodes, comma separated)")
            }
            if let caFile = cluster.redisCAFile {
                try Self.require(endpoint.usesTLS, .clusterRedisCAFile, "is for a rediss:// cluster.redisUrl")
                guard fileExists(caFile) else { throw .fileNotFound(key: ConfigurationKey.clusterRedisCAFile.path, path: caFile) }
            }
            try Self.require(storage.backend == .postgres, .clusterRedisURL,
                             "needs storage.backend postgres: the nodes of a cluster share one database")
        }
        try Self.require((1...Cluster.maximumCommandTimeoutMs).contains(cluster.commandTimeoutMs), .clusterCommandTimeoutMs,
                         "\(cluster.commandTimeoutMs) is out of range 1...\(Cluster.maximumCommandTimeoutMs)")
        try Self.require((0...Cluster.maximumFollowGraceMs).contains(cluster.followGraceMs), .clusterFollowGraceMs,
                         "\(cluster.followGraceMs) is out of range 0...\(Cluster.maximumFollowGraceMs)")
        if let secret = cluster.busSecret {
            try Self.require(secret.utf8.count >= Cluster.minimumBusSecretBytes, .clusterBusSecret,
                             "must be at least \(Cluster.minimumBusSecretBytes) bytes")
        }
        if storage.backend == .postgres {
            try Self.require(!(storage.postgresURL ?? "").isEmpty, .storagePostgresURL,
                             "must be set with storage.backend postgres (postgres://user:password@host:port/database)")
            // The URL is a secret: the problem is named, the value never repeated.
            let problem = storage.postgresURL.flatMap(PostgresStore.urlProblem)
            try Self.require(problem == nil, .storagePostgresURL, problem ?? "")
        }
        try Self.requireSecret(auth.jwtSecret, .authJWTSecret)
        // HS256 keys shorter than the hash output weaken the MAC (RFC 7518 §3.2).
        try Self.require(auth.jwtSecret.isEmpty || auth.jwtSecret.utf8.count >= 32, .authJWTSecret,
                         "must be at least 32 bytes (HS256 key)")
        try Self.requireSecret(admin.apiKey, .adminAPIKey)
        try Self.require(admin.apiKey.utf8.count >= Admin.minimumKeyBytes, .adminAPIKey,
                         "must be at least \(Admin.minimumKeyBytes) bytes")
        if let key = metrics.apiKey {
            try Self.require(key.utf8.count >= Admin.minimumKeyBytes, .metricsAPIKey,
                             "must be at least \(Admin.minimumKeyBytes) bytes")
        }
        // The development secret and key are published: on a listener others can reach,
        // anyone could sign tokens or call the admin API.
        if !Server.isLoopback(server.host) {
            try Self.require(auth.jwtSecret != Auth.developmentSecret, .authJWTSecret,
                             "is the published development secret, accepted only on a loopback server.host (set \(ConfigurationKey.authJWTSecret.environmentVariable))")
            try Self.require(admin.apiKey != Admin.developmentKey, .adminAPIKey,
                             "is the published development key, accepted only on a loopback server.host (set \(ConfigurationKey.adminAPIKey.environmentVariable))")
        }
        try validateTLS(fileExists: fileExists)
        try validatePush()
    }

    public static func isRegularFile(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
    }

    private func validateTLS(fileExists: (String) -> Bool) throws(ConfigurationError) {
        switch (tls.certificateFile, tls.privateKeyFile) {
        case (nil, nil):
            return
        case (.some, nil):
            throw .missingValue(key: ConfigurationKey.tlsPrivateKeyFile.path, reason: "required when tls.certificateFile is set (set both for wss, or neither)")
        case (nil, .some):
            throw .missingValue(key: ConfigurationKey.tlsCertificateFile.path, reason: "required when tls.privateKeyFile is set (set both for wss, or neither)")
        case (.some(let certificate), .some(let privateKey)):
            guard fileExists(certificate) else {
                throw .fileNotFound(key: ConfigurationKey.tlsCertificateFile.path, path: certificate)
            }
            guard fileExists(privateKey) else {
                throw .fileNotFound(key: ConfigurationKey.tlsPrivateKeyFile.path, path: privateKey)
            }
        }
    }

    private func validatePush() throws(ConfigurationError) {
        switch push.sink {
        case .none:
            return
        case .file:
            guard push.file != nil else {
                throw .missingValue(key: ConfigurationKey.pushFile.path, reason: "required when push.sink is \"file\"")
            }
        case .webhook:
            guard let webhookUrl = push.webhookUrl else {
                throw .missingValue(key: ConfigurationKey.pushWebhookURL.path, reason: "required when push.sink is \"webhook\"")
            }
            let url = URL(string: webhookUrl)
            let isHTTP = url?.scheme.map { ["http", "https"].contains($0.lowercased()) } ?? false
            try Self.require(isHTTP && url?.host != nil, .pushWebhookURL, "\"\(webhookUrl)\" is not an http or https URL")
        }
    }

    /// The production file leaves secrets empty so that forgetting the
    /// environment variable stops start-up instead of running on dev values.
    private static func requireSecret(_ secret: String, _ key: ConfigurationKey) throws(ConfigurationError) {
        try require(!secret.isEmpty, key, "must not be empty (set \(key.environmentVariable))")
    }

    private static func require(
        _ condition: Bool,
        _ key: ConfigurationKey,
        _ problem: @autoclosure () -> String
    ) throws(ConfigurationError) {
        guard condition else {
            throw .invalidValue(key: key.path, problem: problem())
        }
    }
}
