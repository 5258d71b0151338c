/// When a cluster chaos run breaks what: node kills spread over the run (round-robin over
/// the nodes, each restarted a little later), Redis restarts, and PostgreSQL outages of a
/// fixed length. A node is never restarted while PostgreSQL is down (a node loads its
/// state from the database at start), so a restart due then waits until the database is
/// back.
struct ChaosSchedule {
    enum Fault: Equatable {
        case killNode(Int)
        case startNode(Int)
        case killRedis
        case startRedis
        case stopPostgres
        case startPostgres
    }

    struct Step: Equatable {
        var at: Double
        var fault: Fault
    }

    private(set) var steps: [Step] = []

    init(seconds: Double, nodes: Int, nodeKills: Int, nodeDownSeconds: Double, redisRestarts: Int,
         redisDownSeconds: Double, postgresOutages: Int, postgresDownSeconds: Double) {
        var outages: [(Double, Double)] = []
        for n in 0..<postgresOutages {
            let place = (Double(n) + 0.6) / (Double(postgresOutages) + 0.2)
            let stop = seconds * place
            outages.append((stop, stop + postgresDownSeconds))
            steps.append(Step(at: stop, fault: .stopPostgres))
            steps.append(Step(at: stop + postgresDownSeconds, fault: .startPostgres))
        }
        for n in 0..<redisRestarts {
            let kill = seconds * (Double(n) + 0.3) / Double(redisRestarts)
            steps.append(Step(at: kill, fault: .killRedis))
            steps.append(Step(at: kill + redisDownSeconds, fault: .startRedis))
        }
        for n in 0..<nodeKills {
            let kill = seconds * (Double(n) + 0.5) / Double(nodeKills)
            var start = kill + nodeDownSeconds
            for (down, up) in outages where start >= down - 0.5 && start < up + 1 { start = up + 1 }
            steps.append(Step(at: kill, fault: .killNode(n % nodes)))
            steps.append(Step(at: start, fault: .startNode(n % nodes)))
        }
        steps.sort { $0.at < $1.at }
    }

    var count: (nodeKills: Int, redisRestarts: Int, postgresOutages: Int) {
        (steps.filter { if case .killNode = $0.fault { true } else { false } }.count,
         steps.filter { $0.fault == .killRedis }.count, steps.filter { $0.fault == .stopPostgres }.count)
    }
}
