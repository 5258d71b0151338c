import ChatCore
import ClientAssets
import Dispatch
import Foundation
import EventLoop
import Logging
import PostgresStorage
import Redis
import SQLiteStorage
import Storage
import Synchronization

/// The running gateway: event loops, the listener, TLS when configured, and
/// the chat core with its store.
public final class GatewayServer: @unchecked Sendable {
    public let group: EventLoopGroup
    private var listener: Listener?
    private let settings: TransportSettings
    private let tls: TLSContext?
    private var ticketRotation: DispatchSourceTimer?
    private let logger: Logger
    private(set) var router: HTTPRouter
    private var store: (any Store)?
    let metrics = GatewayMetrics()

    init(settings: TransportSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        group = EventLoopGroup(count: settings.eventLoops)
        router = HTTPRouter(echoEnabled: settings.echoEnabled, metrics: metrics,
                            metricsCredential: Self.metricsCredential(settings, keys: []))
        let metrics = self.metrics
        for loop in group.loops {
            metrics.writeQueueBytes(loop: loop.index, bytes: 0)
            loop.execute {
                loop.sweepObserver = { loop in metrics.writeQueueBytes(loop: loop.index, bytes: loop.queuedOutputBytes) }
            }
        }
        if let certificate = settings.certificateFile, let key = settings.privateKeyFile {
            let rotation = settings.ticketKeyRotationSeconds
            let tls = try TLSContext.server(certificateFile: certificate, privateKeyFile: key,
                                            ticketLifetimeSeconds: rotation > 0 ? 2 * rotation : nil)
            self.tls = tls
            if rotation > 0 {
                let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
                timer.schedule(deadline: .now() + .seconds(rotation), repeating: .seconds(rotation))
                timer.setEventHandler { tls.rotateTicketKeys() }
                timer.resume()
                ticketRotation = timer
            }
        } else {
            tls = nil
        }
    }

    deinit { ticketRotation?.cancel() }

    /// Starts a new session ticket key now, as the timer does every `tls.ticketKeyRotationSeconds`.
    @discardableResult
    func rotateTicketKeys() -> Bool { tls?.rotateTicketKeys() ?? false }

    /// A gateway with its chat core: opens the store under `storage.dataDirectory`
    /// and loads it.
    public static func make(configuration: GatewayConfiguration, logger: Logger) async throws -> GatewayServer {
        try await make(settings: TransportSettings(configuration), configuration: configuration, logger: logger,
                       clock: SystemClock())
    }

    /// A node id for a cluster node that was not given one.
    static func randomNodeID() -> String {
        "node-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    }

    /// The same with the transport's settings given apart (tests bind port 0) and an
    /// injectable clock.
    static func make(settings: TransportSettings, configuration: GatewayConfiguration, logger: Logger,
                     clock: any ChatCore.Clock) async throws -> GatewayServer {
        let chat = configuration
        let server = try GatewayServer(settings: settings, logger: logger)
        let tokens = await TokenAuthority(secret: chat.auth.jwtSecret, clock: clock)
        let metrics = server.metrics
        let observeCommit: @Sendable (Int, UInt64) -> Void = { writes, nanoseconds in
            metrics.groupCommitBatchSize.record(writes)
            metrics.groupCommitLatency.recordNanoseconds(Int64(nanoseconds))
        }
        let store: any Store
        var probes: [DependencyWatch.Probe] = []
        if chat.storage.backend == .postgres, let url = chat.storage.postgresURL {
            let postgres = try await PostgresStore.open(url: url, logger: logger,
                                                        strictBlocking: chat.blocking.mode == .strict,
                                                        commitObserver: observeCommit)
            probes.append(DependencyWatch.Probe(name: "postgres", isReachable: { await postgres.isReachable() }))
            store = postgres
        } else {
            store = try SQLiteStore(directory: chat.storage.dataDirectory, synchronous: chat.storage.synchronous == .full ? .full : .normal,
                                    commitObserver: observeCommit)
        }
        let push: any PushSink
        switch chat.push.sink {
        case .none: push = NoPushSink()
        case .file: push = try chat.push.file.map { try JSONLinesPushSink(path: $0, metrics: metrics) } ?? NoPushSink()
        case .webhook:
            push = chat.push.webhookUrl.flatMap(URL.init(string:)).map { WebhookPushSink(url: $0, logger: logger, metrics: metrics) }
                ?? NoPushSink()
        }
        let service = try ChatService(store: store, push: push, tokens: tokens, clock: clock, configuration: chat,
                                      loops: server.group.loops, logger: logger, metrics: metrics)
        try await service.restoreSendersNewest()
        server.store = store
        if let url = chat.cluster.redisURL, let loop = server.group.loops.first {
            let bus = ClusterBus(redis: try busRedis(url: url, chat: chat),
                                 signature: chat.cluster.busSecret.map(BusSignature.init(secret:)),
                                 nodeID: chat.cluster.nodeID ?? randomNodeID(),
                                 loop: loop, logger: logger,
                                 metrics: metrics, received: { [weak service] event in service?.busReceived(event) },
                                 resumed: { [weak service] in service?.busResumed() },
                                 presenceChanged: { [weak service] user, online, at in
                                     service?.busPresence(user, online: online, at: at)
                                 },
                                 presenceSnapshot: { [weak service] entries in service?.busPresenceSnapshot(entries) },
                                 typingReceived: { [weak service] relay in service?.busTyping(relay) },
                                 resyncRequested: { [weak service] scope in service?.busResync(scope) })
            service.bus = bus
            probes.append(DependencyWatch.Probe(name: "redis", isReachable: { bus.isReachable }))
            bus.start()
        }
        server.router = HTTPRouter(
            echoEnabled: settings.echoEnabled, metrics: metrics,
            metricsCredential: metricsCredential(settings, keys: [chat.admin.apiKey, chat.metrics.apiKey ?? ""]),
            chat: service, authMessageTimeout: settings.timeouts.handshake,
            admin: AdminAPI(service: service, apiKey: chat.admin.apiKey),
            dependencies: probes.isEmpty ? nil : DependencyWatch(probes: probes, logger: logger),
            console: settings.consoleEnabled ? webConsole(settings, chat: chat, tokens: tokens, logger: logger) : nil)
        return server
    }

    /// How the bus reaches Redis: the endpoint of `url`, or the seeds of a Redis Cluster when
    /// it lists several (validated with the configuration), a verifying TLS context for
    /// `rediss://`, and the command timeout. Errors name what is wrong, never the URL (it
    /// may hold a password).
    private static func busRedis(url: String, chat: GatewayConfiguration) throws -> ClusterBus.Redis {
        let seeds = try RedisEndpoint.parseOneOrSeeds(url)
        let tls: TLSContext? = try seeds[0].usesTLS ? TLSContext.verifyingClient(caFile: chat.cluster.redisCAFile) : nil
        let timeout = Duration.milliseconds(chat.cluster.commandTimeoutMs)
        // An idle connection PINGs often enough that a silent Redis is found within about
        // twice the timeout even when nothing else is asked.
        let keepalive = Duration.milliseconds(max(50, min(1_000, chat.cluster.commandTimeoutMs / 2)))
        if seeds.count > 1 {
            return .cluster(RedisClusterSettings(seeds: seeds, tls: tls, connectTimeout: timeout, commandTimeout: timeout,
                                                 keepaliveInterval: keepalive))
        }
        return .single(RedisConnectionSettings(endpoint: seeds[0], tls: tls, connectTimeout: timeout, commandTimeout: timeout,
                                               keepaliveInterval: keepalive))
    }

    /// The web console over the files beside the binary; when they are missing it answers
    /// 503 saying so, and the log says it once.
    private static func webConsole(_ settings: TransportSettings, chat: GatewayConfiguration, tokens: TokenAuthority,
                                   logger: Logger) -> WebConsole {
        let resources = ClientAssets.load()
        let console = WebConsole(files: ConsoleFiles(resources: resources ?? [:]),
                                 devSignIn: DevSignIn(jwtSecret: chat.auth.jwtSecret, listenerHost: settings.host), tokens: tokens)
        if console.files.hasPage {
            logger.info("console.enabled", metadata: ["path": "\(ConsoleFiles.pagePath)",
                                                      "devSignIn": .stringConvertible(console.devSignIn.isOffered)])
        } else {
            logger.warning("console.files_missing", metadata: ["bundle": "\(ClientAssets.bundleName)"])
        }
        return console
    }

    /// `/metrics` is open on a loopback listener and takes one of `keys` on any other.
    private static func metricsCredential(_ settings: TransportSettings, keys: [String]) -> BearerCredential? {
        GatewayConfiguration.Server.isLoopback(settings.host) ? nil : BearerCredential(keys)
    }

    /// Binds and starts accepting; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        let settings = self.settings
        let context = HTTPConnectionHandler.Context(
            router: router, settings: settings, observer: ConnectionObserver(logger: logger, metrics: metrics))
        let tls = self.tls
        let listener = try Listener(host: settings.host, port: settings.port, group: group) { fd, loop in
            let handler = HTTPConnectionHandler(context: context, tick: loop.tick)
            loop.heldInput.limit = settings.heldBeforeUpgradeBytesPerLoop
            let connection = SocketConnection.accepted(fd: fd, loop: loop, tls: tls, handler: handler,
                                                       handshakesAtOnce: settings.handshakesAtOnce)
            connection?.closeTimeoutTicks = settings.timeouts.close
            connection?.outputBound = settings.outputBound
        }
        let (logger, metrics) = (self.logger, self.metrics)
        let lastLogged = Atomic<UInt64>(0)
        listener.onAcceptPaused = { error in
            metrics.acceptPauses.increment()
            // One line per ten seconds of exhaustion, not one per pause.
            let second = DispatchTime.now().uptimeNanoseconds / 1_000_000_000
            if second >= lastLogged.load(ordering: .relaxed) + 10 {
                lastLogged.store(second, ordering: .relaxed)
                logger.warning("listener.accept_paused", metadata: ["errno": "\(error)", "retryMs": "100"])
            }
        }
        listener.start()
        self.listener = listener
        _ = ProcessMetrics.startTime  // taken now, not at the first scrape
        logger.info("gateway.start", metadata: [
            "host": "\(settings.host)", "port": .stringConvertible(listener.port),
            "transport": "\(tls == nil ? "ws" : "wss")", "eventLoops": .stringConvertible(group.loops.count),
            "version": "\(GatewayVersion.release)", "protocol": "\(GatewayVersion.protocolVersion)",
        ])
        return listener.port
    }

    public var port: Int? { listener?.port }

    /// Stops accepting, sends every WebSocket a close 1001, flushes the store and
    /// calls `completion` once every connection is gone or `timeoutSeconds` have passed.
    public func drain(timeoutSeconds: Double, completion: @escaping @Sendable (_ remaining: Int) -> Void) {
        router.startDraining()
        listener?.stop()
        listener = nil
        logger.info("gateway.drain", metadata: ["timeoutSeconds": .stringConvertible(timeoutSeconds)])
        for loop in group.loops {
            loop.execute {
                for connection in Array(loop.liveConnections) {
                    if let handler = connection.handler as? HTTPConnectionHandler {
                        handler.goAway(connection)
                    } else {
                        connection.closeNow()
                    }
                }
            }
        }
        let deadline = DispatchTime.now() + timeoutSeconds
        let group = self.group
        let store = self.store
        @Sendable func poll() {
            let remaining = group.loops.reduce(0) { total, loop in total + loop.queue.sync { loop.connectionCount } }
            if remaining == 0 || DispatchTime.now() >= deadline {
                store?.flush()
                completion(remaining)
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.05, execute: poll)
            }
        }
        DispatchQueue.global().async(execute: poll)
    }

    /// The last step before the process exits: stops accepting, drops what connections are
    /// left, flushes the store and stops every loop, so nothing is inside OpenSSL or SQLite
    /// when the exit handlers run.
    public func quiesce() {
        listener?.stop()
        listener = nil
        for loop in group.loops { loop.stop() }
        store?.flush()
    }

    /// Every loop stopped with no connection left (after `quiesce`).
    public var isQuiesced: Bool {
        group.loops.allSatisfy { loop in loop.queue.sync { loop.isStopped && loop.connectionCount == 0 } }
    }

    /// Stops accepting and closes every connection at once.
    public func stop() {
        listener?.stop()
        listener = nil
        for loop in group.loops {
            loop.queue.sync {
                for connection in Array(loop.liveConnections) { connection.closeNow() }
            }
        }
        router.dependencies?.stop()
        router.chat?.bus?.stop()
        store?.flush()
    }
}

/// Tokens for the `token` command.
public enum ClientTokens {
    public static func issue(secret: String, userID: String, ttlSeconds: Int64) async throws -> String {
        guard TokenAuthority.isValidUserID(userID) else {
            throw ChatError(.badRequest, "user id must be 1-128 characters of [A-Za-z0-9_.@-]")
        }
        let authority = await TokenAuthority(secret: secret, clock: SystemClock())
        return try await authority.issue(userID: userID, ttlSeconds: ttlSeconds).token
    }
}
