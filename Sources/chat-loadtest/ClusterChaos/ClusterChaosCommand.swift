import ArgumentParser
import EventLoop

/// `chat-loadtest cluster-chaos`: PROTOCOL.md §13 "Faults" on a cluster. Clients send
/// through every node while nodes are killed with SIGKILL and restarted, Redis is killed
/// and restarted and PostgreSQL is stopped for a while; afterwards every `ok` must be in
/// history exactly once, every channel's seqs gapless, and every client (those that got
/// `session.resync` above all) must have seen every message of its channels. It owns the
/// nodes and Redis as child processes; `scripts/chaos --cluster` starts PostgreSQL and
/// passes the commands that stop and start it.
struct ClusterChaosCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster-chaos",
        abstract: "Nodes killed, Redis restarted, PostgreSQL stopped under load: nothing acknowledged lost, seq gapless, every client caught up.",
        discussion: """
            Starts --nodes `chat-gateway serve` nodes (--gateway-binary) on PostgreSQL (--postgres-url) and a \
            redis-server of its own, creates --clients users in --channels group channels, and lets every client \
            send --rate messages/s with a clientMessageId each for --seconds while the schedule kills nodes \
            (--node-kills, round-robin, each restarted 1.5 s later), kills and restarts Redis (--redis-restarts) \
            and stops PostgreSQL (--postgres-outages × --postgres-down s, with --postgres-stop / --postgres-start). \
            A client whose node dies reconnects to the next node and sends its unanswered messages again. Then \
            the retries settle, every channel's history is read and checked, and each client's deliveries are \
            compared with it. Exit status 1 unless every check holds.
            """)

    @Option(name: .customLong("gateway-binary")) var gatewayBinary: String
    @Option(name: .customLong("redis-binary")) var redisBinary = "/usr/bin/redis-server"
    @Option(name: .customLong("redis-url"),
            help: "A Redis (or the seeds of a Redis Cluster) the caller runs, instead of a redis-server of its own.")
    var redisURL: String?
    @Option(name: .customLong("redis-kill"), help: "With --redis-url: shell command of the Redis fault (e.g. kill a master).")
    var redisKill: String?
    @Option(name: .customLong("redis-start"), help: "With --redis-url: shell command that mends it.")
    var redisStart: String?
    @Option(name: .customLong("postgres-url")) var postgresURL: String
    @Option(name: .customLong("postgres-stop"), help: "Shell command that stops PostgreSQL.") var postgresStop: String
    @Option(name: .customLong("postgres-start"), help: "Shell command that starts it again.") var postgresStart: String
    @Option(help: "Folder for the nodes' and Redis's logs.") var folder: String
    @Option var nodes = 3
    @Option var clients = 200
    @Option var channels = 4
    @Option(help: "Messages per second each client sends.") var rate = 1.0
    @Option(help: "Seconds of load with faults.") var seconds = 150.0
    @Option(name: .customLong("node-kills")) var nodeKills = 20
    @Option(name: .customLong("redis-restarts")) var redisRestarts = 5
    @Option(name: .customLong("postgres-outages")) var postgresOutages = 2
    @Option(name: .customLong("postgres-down"), help: "Seconds each PostgreSQL outage lasts.") var postgresDown = 5.0
    @Option(name: .customLong("admin-key")) var adminKey = "dev-only-admin-key-change-me"

    func validate() throws {
        guard nodes >= 2, clients >= 1, channels >= 1, rate > 0, seconds >= 10 else {
            throw ValidationError("--nodes ≥ 2, --clients, --channels and --rate positive, --seconds ≥ 10")
        }
        guard (redisURL == nil) == (redisKill == nil) && (redisURL == nil) == (redisStart == nil) else {
            throw ValidationError("--redis-url, --redis-kill and --redis-start go together")
        }
    }

    func run() throws {
        let started = MonotonicClock.now()
        let external = redisURL.map { ChaosDependencies.ExternalRedis(url: $0, kill: redisKill ?? "", start: redisStart ?? "") }
        let dependencies = try ChaosDependencies(redisBinary: redisBinary, external: external, logPath: folder + "/redis.log",
                                                 pidPath: folder + "/redis.pid", postgresStop: postgresStop,
                                                 postgresStart: postgresStart)
        if external == nil { try dependencies.startRedis() }
        defer { if external == nil { try? dependencies.killRedis() } }
        var children: [ChaosGateway] = []
        defer { for node in children { node.stop() } }
        for n in 1...nodes {
            let node = try ChaosGateway(
                binary: gatewayBinary, dataDirectory: folder + "/node-\(n)", logPath: folder + "/node-\(n).log",
                pidPath: folder + "/node-\(n).pid",
                environment: [
                    "CHAT_GATEWAY_STORAGE_BACKEND": "postgres", "CHAT_GATEWAY_STORAGE_POSTGRESURL": postgresURL,
                    "CHAT_GATEWAY_CLUSTER_REDISURL": dependencies.redisURL, "CHAT_GATEWAY_CLUSTER_NODEID": "node-\(n)",
                ])
            try node.start(timeout: 30)
            children.append(node)
        }
        Console.error("chaos: \(nodes) nodes on ports \(children.map { String($0.port) }.joined(separator: ", ")), "
                      + "redis \(dependencies.redisURL), logs in \(folder)")

        let group = EventLoopGroup(count: 1)
        let address = try GatewayAddress(url: "ws://127.0.0.1:\(children[0].port)", forceTLS: false)
        let admin = AdminClient(address: address, apiKey: adminKey, tls: nil, group: group, concurrency: 4)
        let roster = try ClusterChaosRoster.provision(admin: admin, senders: clients, channels: channels)
        let run = try ClusterChaosRun(nodes: children, dependencies: dependencies, roster: roster, loop: group.loops[0],
                                      sendInterval: 1 / rate)
        let schedule = ChaosSchedule(seconds: seconds, nodes: nodes, nodeKills: nodeKills, nodeDownSeconds: 1.5,
                                     redisRestarts: redisRestarts, redisDownSeconds: dependencies.redisDownSeconds, postgresOutages: postgresOutages,
                                     postgresDownSeconds: postgresDown)
        var report = ClusterChaosReport(nodes: nodes, clients: clients, channelIDs: roster.channelIDs, rate: rate,
                                        redis: external == nil ? "one Redis" : "the Redis at --redis-url")
        do {
            try run.run(schedule) { Console.error($0) }
            Console.error("chaos: faults done; settling the retries")
            try run.settle(timeout: 120)
            run.quiet(seconds: 3)
            let histories = try run.readHistories(timeout: 120)
            report.storedPerChannel = histories.map(\.count)
            report.audit = ChaosAudit(histories: histories, acks: run.acks, userIDs: roster.senderIDs,
                                      channelIDs: roster.channelIDs)
            report.deliveries = run.deliveries(lastSeqs: histories.map { $0.last?.seq ?? 0 })
            run.closeAll()
        } catch {
            report.failure = "\(error)"
        }
        report.faults = run.done
        report.counters = run.counters
        report.unresolved = run.unresolved
        report.wallSeconds = Double(MonotonicClock.now() - started) / 1e9
        Console.output(report.table())
        if !report.isClean { throw ExitCode(1) }
    }
}

/// The figures of a cluster chaos run and its verdict.
struct ClusterChaosReport {
    var nodes: Int
    var clients: Int
    var channelIDs: [String]
    var rate: Double
    var redis: String
    var faults: [ChaosSchedule.Fault] = []
    var counters = ChaosCounters()
    var unresolved = 0
    var audit: ChaosAudit?
    var deliveries: ChaosDeliveryFigures?
    var storedPerChannel: [Int] = []
    var failure: String?
    var wallSeconds = 0.0

    var isClean: Bool {
        failure == nil && unresolved == 0 && counters.mismatched == 0 && (audit?.isClean ?? false)
            && deliveries.map { $0.missing == 0 } ?? false
    }

    func table() -> String {
        func count(_ match: (ChaosSchedule.Fault) -> Bool) -> Int { faults.filter(match).count }
        var rows: [(String, String)] = []
        let c = counters
        rows.append(("cluster", "\(nodes) nodes on one PostgreSQL and \(redis)"))
        rows.append(("clients", "\(clients) users in \(channelIDs.count) group channels, \(Format.fixed(rate, 1)) msgs/s each"))
        rows.append(("faults", "\(count { if case .killNode = $0 { true } else { false } }) node kills (kill -9, restart), "
                     + "\(count { $0 == .killRedis }) Redis faults (\(redis == "one Redis" ? "kill -9, restart" : "--redis-kill, then --redis-start")), \(count { $0 == .stopPostgres }) PostgreSQL outages"))
        rows.append(("messages acknowledged", "\(Format.grouped(c.acked)) of \(Format.grouped(c.acked + unresolved)) issued"))
        rows.append(("sends cut by a kill", "\(Format.grouped(c.unansweredAtKill))"))
        rows.append(("retried", "\(Format.grouped(c.retried)) messages in \(Format.grouped(c.retryFrames)) frames"))
        rows.append(("error replies", "\(Format.grouped(c.errors)) (ERR_INTERNAL while PostgreSQL was down; retried)"))
        if let audit {
            rows.append(("stored total", "\(Format.grouped(audit.storedTotal)) (\(storedPerChannel.map(String.init).joined(separator: " / ")))"))
            rows.append(("every ok in history once", audit.lostAcknowledged == 0 && audit.duplicates == 0
                         ? "yes" : "NO: \(audit.lostAcknowledged) lost, \(audit.duplicates) duplicated"))
            rows.append(("seq gaps", "\(audit.gaps)"))
            rows.append(("stored without an ok", "\(audit.storedWithoutAck)"))
        }
        if let d = deliveries {
            rows.append(("session.resync", "\(d.resyncEvents) events to \(d.resynced) clients; caught up: \(d.resyncedComplete) of \(d.resynced)"))
            rows.append(("clients with every message", "\(d.complete) of \(d.clients) (\(d.missing) messages missing)"))
            rows.append(("catch-up reads", "\(Format.grouped(d.catchUpReads)) (after reconnects, resyncs and \(d.gapsSeenLive) skipped seqs seen live)"))
        }
        rows.append(("unresolved sends", "\(unresolved)"))
        rows.append(("wall time", "\(Format.fixed(wallSeconds, 1)) s"))
        if let failure { rows.append(("failure", failure)) }
        for example in audit?.examples ?? [] { rows.append(("finding", example)) }
        rows.append(("result", isClean ? "PASS" : "FAIL"))
        return Format.table(rows)
    }
}
