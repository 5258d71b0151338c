/// Creates what a `room` or `rooms` run needs through the admin API: the member
/// users `P-u0…`, one token each, `channels` group channels splitting them in order
/// (one channel of all of them for `room`) and, with
/// `--block-each K`, K outside users `P-x0…` that every member blocks (so every
/// recipient connection carries a K-entry blocked set while deliveries stay the same);
/// with `--stalled-members S`, S more channel members `P-s0…` that never read.
struct RoomProvisioner {
    let admin: AdminClient
    let prefix: String
    let members: Int
    var channels = 1
    let blockEach: Int
    var stalled = 0
    let tokenTTLSeconds = 3600

    struct Room: Sendable {
        var channelIDs: [String]
        var userIDs: [String]
        var tokens: [String]
        var stalledTokens: [String]
    }

    func member(_ index: Int) -> String { "\(prefix)-u\(index)" }
    func stalledMember(_ index: Int) -> String { "\(prefix)-s\(index)" }
    func outsider(_ index: Int) -> String { "\(prefix)-x\(index)" }

    func provision(log: (String) -> Void) throws(LoadTestError) -> Room {
        let userIDs = (0..<members).map(member)
        let outsiders = (0..<blockEach).map(outsider)
        let stalledIDs = (0..<stalled).map(stalledMember)

        log("creating \(userIDs.count + outsiders.count + stalledIDs.count) users")
        _ = try admin.run((userIDs + outsiders + stalledIDs).map { .post("/v1/admin/users", "{\"id\":\(JSONText.quote($0))}") })

        if blockEach > 0 {
            var calls: [AdminClient.Call] = []
            for user in userIDs {
                for start in stride(from: 0, to: outsiders.count, by: 100) {
                    let chunk = outsiders[start..<min(start + 100, outsiders.count)]
                    calls.append(.post("/v1/admin/users/\(user)/blocks", "{\"userIds\":\(JSONText.array(chunk))}"))
                }
            }
            log("blocking: \(members) members × \(blockEach) outsiders in \(calls.count) calls")
            let answers = try admin.run(calls)
            let successes = answers.reduce(0) { $0 + JSONText.occurrences(of: "\"success\"", in: $1.bodyText) }
            guard successes == members * blockEach else {
                throw LoadTestError("block calls answered \(successes) successes, expected \(members * blockEach): \(answers.first?.bodyText ?? "")")
            }
        }

        log(channels == 1 ? "creating the group channel" : "creating \(channels) group channels of \(members / channels)")
        let groupSize = members / channels
        let creates: [AdminClient.Call] = (0..<channels).map { channel in
            var memberIDs = Array(userIDs[channel * groupSize..<(channel + 1) * groupSize])
            if channel == 0 { memberIDs += stalledIDs }
            return .post("/v1/admin/channels", "{\"type\":\"group\",\"name\":\"loadtest-\(channel)\",\"userIds\":\(JSONText.array(memberIDs))}")
        }
        var channelIDs: [String] = []
        for answer in try admin.run(creates) {
            guard let channelID = JSONText.firstString("id", in: answer.bodyText) else {
                throw LoadTestError("channel create answered without an id: \(answer.bodyText.prefix(200))")
            }
            channelIDs.append(channelID)
        }

        log("issuing \(members + stalled) tokens")
        let tokens = try issueTokens(userIDs + stalledIDs)
        return Room(channelIDs: channelIDs, userIDs: userIDs, tokens: Array(tokens.prefix(members)),
                    stalledTokens: Array(tokens.dropFirst(members)))
    }

    /// Users `P-u0…` and a token each, no channel (the `idle` scenario).
    func provisionUsers(log: (String) -> Void) throws(LoadTestError) -> [String] {
        let userIDs = (0..<members).map(member)
        log("creating \(userIDs.count) users")
        _ = try admin.run(userIDs.map { .post("/v1/admin/users", "{\"id\":\(JSONText.quote($0))}") })
        log("issuing \(userIDs.count) tokens")
        return try issueTokens(userIDs)
    }

    private func issueTokens(_ users: [String]) throws(LoadTestError) -> [String] {
        let answers = try admin.run(users.map { .post("/v1/admin/tokens", "{\"userId\":\(JSONText.quote($0)),\"ttlSeconds\":\(tokenTTLSeconds)}") })
        var tokens: [String] = []
        for (user, answer) in zip(users, answers) {
            guard let token = JSONText.firstString("token", in: answer.bodyText) else {
                throw LoadTestError("token for \(user) missing from \(answer.bodyText.prefix(200))")
            }
            tokens.append(token)
        }
        return tokens
    }
}
