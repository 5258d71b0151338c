import Logging

/// Everything the gateway reads at start-up (PROTOCOL.md §12). `init()` gives
/// the defaults; `load(filePath:environment:)` applies a file and the
/// environment on top of them.
public struct GatewayConfiguration: Sendable, Equatable {
    public var server: Server
    public var tls: TLS
    public var storage: Storage
    public var auth: Auth
    public var admin: Admin
    public var blocking: Blocking
    public var limits: Limits
    public var push: Push
    public var log: Log
    public var shutdown: Shutdown
    public var conformance: Conformance
    public var metrics: MetricsEndpoint
    public var cluster = Cluster()
    public var console = Console()

    public init(
        server: Server = Server(),
        tls: TLS = TLS(),
        storage: Storage = Storage(),
        auth: Auth = Auth(),
        admin: Admin = Admin(),
        blocking: Blocking = Blocking(),
        limits: Limits = Limits(),
        push: Push = Push(),
        log: Log = Log(),
        shutdown: Shutdown = Shutdown(),
        conformance: Conformance = Conformance(),
        metrics: MetricsEndpoint = MetricsEndpoint()
    ) {
        self.server = server
        self.tls = tls
        self.storage = storage
        self.auth = auth
        self.admin = admin
        self.blocking = blocking
        self.limits = limits
        self.push = push
        self.log = log
        self.shutdown = shutdown
        self.conformance = conformance
        self.metrics = metrics
    }

    /// Both TLS files are set: the listener speaks wss/https.
    public var isTLS: Bool { tls.certificateFile != nil && tls.privateKeyFile != nil }

    /// The JWT secret or the admin key is still the published development
    /// value; the server should log a warning at start-up.
    public var usesDevSecrets: Bool { !devSecretKeys.isEmpty }

    /// Which of the secrets hold the published development value: the keys, and the
    /// environment variables that set them, for the start-up warning.
    public var devSecretKeys: [(key: String, environmentVariable: String)] {
        var keys: [ConfigurationKey] = []
        if auth.jwtSecret == Auth.developmentSecret { keys.append(.authJWTSecret) }
        if admin.apiKey == Admin.developmentKey { keys.append(.adminAPIKey) }
        return keys.map { ($0.path, $0.environmentVariable) }
    }
}

extension GatewayConfiguration {
    public struct Storage: Sendable, Equatable {
        /// SQLite `PRAGMA synchronous` of the writer (WAL mode).
        public enum Synchronous: String, Sendable, Equatable, CaseIterable {
            /// Commits reach the OS before `ok`: an acknowledged message survives the
            /// process being killed; an OS crash or power loss may lose the last commits.
            case normal
            /// Every group commit is fsynced before `ok`: also survives power loss.
            case full
        }

        /// Where the chat state lives (PROTOCOL.md §12, §13).
        public enum Backend: String, Sendable, Equatable, CaseIterable {
            /// `dataDirectory/chat.sqlite`: one node.
            case sqlite
            /// `postgresUrl`: the database several nodes share.
            case postgres
        }

        public var backend: Backend
        public var dataDirectory: String
        public var synchronous: Synchronous
        public var postgresURL: String?

        public init(backend: Backend = .sqlite, dataDirectory: String = "./data", synchronous: Synchronous = .normal,
                    postgresURL: String? = nil) {
            self.backend = backend
            self.dataDirectory = dataDirectory
            self.synchronous = synchronous
            self.postgresURL = postgresURL
        }
    }

    public struct Auth: Sendable, Equatable {
        /// Public, so never safe outside development.
        public static let developmentSecret = "dev-only-jwt-secret-change-me-0123456789abcdef"

        public var jwtSecret: String

        public init(jwtSecret: String = Auth.developmentSecret) {
            self.jwtSecret = jwtSecret
        }
    }

    public struct Admin: Sendable, Equatable {
        /// Public, so never safe outside development.
        public static let developmentKey = "dev-only-admin-key-change-me"
        /// A shorter key could be guessed: 24 random characters carry well over 128 bits.
        public static let minimumKeyBytes = 24

        public var apiKey: String

        public init(apiKey: String = Admin.developmentKey) {
            self.apiKey = apiKey
        }
    }

    /// Cluster mode (PROTOCOL.md §13): set `redisURL` and the node joins the others that
    /// share its PostgreSQL database and this Redis.
    public struct Cluster: Sendable, Equatable {
        public static let defaultCommandTimeoutMs = 2_000
        /// Longest `commandTimeoutMs` accepted (a minute: past that a paused Redis hangs requests).
        public static let maximumCommandTimeoutMs = 60_000
        /// Shortest `busSecret`: as long as the HMAC-SHA256 output (RFC 2104 §3).
        public static let minimumBusSecretBytes = 32
        public static let defaultFollowGraceMs = 30_000
        /// Longest `followGraceMs` accepted (an hour).
        public static let maximumFollowGraceMs = 3_600_000

        /// `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (`RedisEndpoint`).
        public var redisURL: String?
        /// Names this node in logs, metrics and bus events; random per start when unset.
        public var nodeID: String?
        /// PEM CA certificates a `rediss://` server's chain must lead to (unset: the system's).
        public var redisCAFile: String?
        /// A Redis command (or a bus event's echo) not answered within this fails.
        public var commandTimeoutMs: Int
        /// Set: every bus payload carries an HMAC-SHA256 under it (`BusSignature`).
        public var busSecret: String?
        /// How long a node keeps following a channel's stream after its last local member
        /// session left (`ChannelInterest`).
        public var followGraceMs: Int

        public init(redisURL: String? = nil, nodeID: String? = nil, redisCAFile: String? = nil,
                    commandTimeoutMs: Int = Cluster.defaultCommandTimeoutMs, busSecret: String? = nil,
                    followGraceMs: Int = Cluster.defaultFollowGraceMs) {
            self.redisURL = redisURL
            self.nodeID = nodeID
            self.redisCAFile = redisCAFile
            self.commandTimeoutMs = commandTimeoutMs
            self.busSecret = busSecret
            self.followGraceMs = followGraceMs
        }
    }

    /// `GET /metrics`: open on a loopback listener; elsewhere it takes the admin key or this one.
    public struct MetricsEndpoint: Sendable, Equatable {
        public var apiKey: String?

        public init(apiKey: String? = nil) {
            self.apiKey = apiKey
        }
    }

    public struct Log: Sendable, Equatable {
        public var level: Logger.Level

        public init(level: Logger.Level = .info) {
            self.level = level
        }
    }

    public struct Shutdown: Sendable, Equatable {
        /// How long a drain waits for connections to close after 1001 before
        /// the process exits.
        public var drainSeconds: Int

        public init(drainSeconds: Int = 10) {
            self.drainSeconds = drainSeconds
        }
    }

    /// The web console at `/console` (PROTOCOL.md §14; docs/ARCHITECTURE.md, "The web console").
    public struct Console: Sendable, Equatable {
        public var enabled: Bool

        public init(enabled: Bool = true) {
            self.enabled = enabled
        }
    }

    public struct Conformance: Sendable, Equatable {
        /// Serve `/v1/echo` for the Autobahn test suite.
        public var echo: Bool

        public init(echo: Bool = false) {
            self.echo = echo
        }
    }
}
