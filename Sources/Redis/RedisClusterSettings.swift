import EventLoop

/// How a `RedisClusterClient` reaches a Redis Cluster: the seed nodes it first asks for
/// the slot map, and the settings every connection to a node shares (each node gets the
/// first seed's scheme and credentials: one cluster, one ACL, one TLS setup).
public struct RedisClusterSettings: Sendable {
    /// Asked for `CLUSTER SLOTS` in order until one answers (`RedisEndpoint.parseList`).
    public var seeds: [RedisEndpoint]
    /// What every connection to a node shares (TLS, which for `rediss://` seeds verifies every
    /// node: its certificate must name the node's IP; the timeouts, the client name, the
    /// reader's limits): a connection to a node is this with the node's address
    /// (`connection(to:)`), so a setting a single connection gains is a cluster's too.
    public var node: RedisConnectionSettings
    /// MOVED and ASK redirects one command follows, and failed attempts to reach its node,
    /// before its caller gets the last reply (or `.disconnected`): a cluster that keeps
    /// sending a command around never holds it forever.
    public var maxRedirects: Int
    /// The wait before asking for the slot map again after a node was lost or could not be
    /// reached: doubling from `minimumBackoff` to `maximumBackoff`, back to the minimum once
    /// a node connects. Two reads of the map are never closer than `minimumBackoff`.
    public var minimumBackoff: Duration
    public var maximumBackoff: Duration

    public init(seeds: [RedisEndpoint], tls: TLSContext? = nil, connectTimeout: Duration = .seconds(2),
                commandTimeout: Duration = .seconds(2), keepaliveInterval: Duration = .seconds(1),
                clientName: String? = nil, readerLimits: RESPReader.Limits = RESPReader.Limits(),
                maxRedirects: Int = 5, minimumBackoff: Duration = .milliseconds(100),
                maximumBackoff: Duration = .seconds(2)) {
        self.seeds = seeds
        // The first seed's scheme and credentials stand for every node (one cluster, one ACL,
        // one TLS setup); its address is replaced per node. Without seeds nothing connects.
        node = RedisConnectionSettings(endpoint: seeds.first ?? RedisEndpoint(host: ""), tls: tls,
                                       connectTimeout: connectTimeout, commandTimeout: commandTimeout,
                                       keepaliveInterval: keepaliveInterval, clientName: clientName,
                                       readerLimits: readerLimits)
        self.maxRedirects = maxRedirects
        self.minimumBackoff = minimumBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// The settings of a connection to the node at `address`.
    public func connection(to address: RedisClusterAddress) -> RedisConnectionSettings {
        var settings = node
        settings.endpoint = RedisEndpoint(host: address.host, port: address.port, usesTLS: node.endpoint.usesTLS,
                                          username: node.endpoint.username, password: node.endpoint.password)
        return settings
    }
}
