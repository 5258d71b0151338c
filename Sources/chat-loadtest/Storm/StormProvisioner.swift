/// Creates what a `storm` run needs through the admin API: clients `P-c0…`, publishers
/// `P-p0…`, `channels` group channels (client i in channel i mod channels, every publisher
/// in all of them) and a token for each user.
struct StormProvisioner {
    let admin: AdminClient
    let prefix: String
    let clients: Int
    let channels: Int
    let publishers: Int
    let tokenTTLSeconds = 3600

    struct Roster: Sendable {
        var channelIDs: [String]
        var clientTokens: [String]
        var publisherTokens: [String]

        /// The channel (index into `channelIDs`) of client `index`.
        func channel(ofClient index: Int) -> Int { index % channelIDs.count }
    }

    func client(_ index: Int) -> String { "\(prefix)-c\(index)" }
    func publisher(_ index: Int) -> String { "\(prefix)-p\(index)" }

    func provision(log: (String) -> Void) throws(LoadTestError) -> Roster {
        let clientIDs = (0..<clients).map(client)
        let publisherIDs = (0..<publishers).map(publisher)
        let users = clientIDs + publisherIDs
        log("creating \(users.count) users")
        _ = try admin.run(users.map { .post("/v1/admin/users", "{\"id\":\(JSONText.quote($0))}") })

        log("creating \(channels) group channel(s) of \(clients / channels) clients and \(publishers) publisher(s)")
        let creates: [AdminClient.Call] = (0..<channels).map { channel in
            let members = stride(from: channel, to: clients, by: channels).map { clientIDs[$0] } + publisherIDs
            return .post("/v1/admin/channels",
                         "{\"type\":\"group\",\"name\":\"storm-\(channel)\",\"userIds\":\(JSONText.array(members))}")
        }
        var channelIDs: [String] = []
        for answer in try admin.run(creates) {
            guard let channelID = JSONText.firstString("id", in: answer.bodyText) else {
                throw LoadTestError("channel create answered without an id: \(answer.bodyText.prefix(200))")
            }
            channelIDs.append(channelID)
        }

        log("issuing \(users.count) tokens")
        let answers = try admin.run(users.map {
            .post("/v1/admin/tokens", "{\"userId\":\(JSONText.quote($0)),\"ttlSeconds\":\(tokenTTLSeconds)}")
        })
        var tokens: [String] = []
        for (user, answer) in zip(users, answers) {
            guard let token = JSONText.firstString("token", in: answer.bodyText) else {
                throw LoadTestError("token for \(user) missing from \(answer.bodyText.prefix(200))")
            }
            tokens.append(token)
        }
        return Roster(channelIDs: channelIDs, clientTokens: Array(tokens.prefix(clients)),
                      publisherTokens: Array(tokens.dropFirst(clients)))
    }
}
