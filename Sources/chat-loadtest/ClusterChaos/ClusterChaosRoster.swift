/// Who sends where in a cluster chaos run, created once through the admin API (PROTOCOL.md
/// §10) before the first fault: senders `chaos-u0…`, sender i a member of group channel
/// i mod `channels` (so each channel's members race for its next seq from every node),
/// and a reader `chaos-auditor` in every channel; a token each, valid on every node (they
/// share the signing secret).
struct ClusterChaosRoster {
    var senderIDs: [String]
    var senderTokens: [String]
    var channelIDs: [String]
    var auditorID = "chaos-auditor"
    var auditorToken: String

    /// The roster indices of sender `index`'s channels.
    func channels(of index: Int) -> [Int] { [index % channelIDs.count] }

    static func provision(admin: AdminClient, senders: Int, channels: Int) throws(LoadTestError) -> ClusterChaosRoster {
        let senderIDs = (0..<senders).map { "chaos-u\($0)" }
        let auditorID = "chaos-auditor"
        _ = try admin.run((senderIDs + [auditorID]).map { .post("/v1/admin/users", "{\"id\":\(JSONText.quote($0))}") })
        let creates: [AdminClient.Call] = (0..<channels).map { channel in
            let members = senderIDs.indices.filter { $0 % channels == channel }.map { senderIDs[$0] } + [auditorID]
            return .post("/v1/admin/channels",
                         "{\"type\":\"group\",\"name\":\"chaos-\(channel)\",\"userIds\":\(JSONText.array(members))}")
        }
        var channelIDs: [String] = []
        for answer in try admin.run(creates) {
            guard let id = JSONText.firstString("id", in: answer.bodyText) else {
                throw LoadTestError("channel create answered without an id: \(answer.bodyText.prefix(200))")
            }
            channelIDs.append(id)
        }
        let tokens = try ChaosRoster.issueTokens(admin: admin, for: senderIDs + [auditorID])
        return ClusterChaosRoster(senderIDs: senderIDs, senderTokens: Array(tokens.dropLast()), channelIDs: channelIDs,
                                  auditorToken: tokens[tokens.count - 1])
    }
}
