/// Who sends where in a chaos run, created once through the admin API (PROTOCOL.md §10)
/// before the first kill: users `chaos-u0…`, `channels` group channels that every one of
/// them is a member of (so several senders race for each channel's next seq), and a
/// token per user. The tokens outlive the run, and the restarted gateway signs with
/// the same secret, so they stay valid across every restart.
struct ChaosRoster {
    var userIDs: [String]
    var channelIDs: [String]
    var tokens: [String]

    static let tokenTTLSeconds = 86_400

    static func provision(admin: AdminClient, senders: Int, channels: Int) throws(LoadTestError) -> ChaosRoster {
        let userIDs = (0..<senders).map { "chaos-u\($0)" }
        _ = try admin.run(userIDs.map { .post("/v1/admin/users", "{\"id\":\(JSONText.quote($0))}") })

        let creates: [AdminClient.Call] = (0..<channels).map {
            .post("/v1/admin/channels", "{\"type\":\"group\",\"name\":\"chaos-\($0)\",\"userIds\":\(JSONText.array(userIDs))}")
        }
        var channelIDs: [String] = []
        for answer in try admin.run(creates) {
            guard let id = JSONText.firstString("id", in: answer.bodyText) else {
                throw LoadTestError("channel create answered without an id: \(answer.bodyText.prefix(200))")
            }
            channelIDs.append(id)
        }

        return ChaosRoster(userIDs: userIDs, channelIDs: channelIDs, tokens: try issueTokens(admin: admin, for: userIDs))
    }

    /// A token per user, valid for `tokenTTLSeconds`, in the users' order.
    static func issueTokens(admin: AdminClient, for userIDs: [String]) throws(LoadTestError) -> [String] {
        let issues: [AdminClient.Call] = userIDs.map {
            .post("/v1/admin/tokens", "{\"userId\":\(JSONText.quote($0)),\"ttlSeconds\":\(tokenTTLSeconds)}")
        }
        var tokens: [String] = []
        for (user, answer) in zip(userIDs, try admin.run(issues)) {
            guard let token = JSONText.firstString("token", in: answer.bodyText) else {
                throw LoadTestError("token for \(user) missing from \(answer.bodyText.prefix(200))")
            }
            tokens.append(token)
        }
        return tokens
    }
}
