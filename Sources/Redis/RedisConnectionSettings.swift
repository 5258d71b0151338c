import EventLoop

/// How one `RedisConnection` reaches its server and how long it waits on it.
public struct RedisConnectionSettings: Sendable {
    public var endpoint: RedisEndpoint
    /// Set for `rediss://`: the client context that verifies the server (its chain and
    /// that its certificate names `endpoint.host`).
    public var tls: TLSContext?
    /// TCP, TLS, AUTH, SELECT and a first PING, all within this.
    public var connectTimeout: Duration
    /// A command not answered within this fails, and with it the connection.
    public var commandTimeout: Duration
    /// A connection with nothing waiting sends a PING this often, so a server that stopped
    /// answering is found out while idle too (a subscribed connection receives nothing
    /// otherwise when the bus is quiet).
    public var keepaliveInterval: Duration
    /// `CLIENT SETNAME` during the handshake (CLIENT LIST shows which node holds what).
    public var clientName: String?
    public var readerLimits: RESPReader.Limits

    /// `commandTimeout` in whole nanoseconds (saturating), for deadlines on uptime.
    public var commandTimeoutNanoseconds: UInt64 { commandTimeout.nanoseconds }

    public init(endpoint: RedisEndpoint, tls: TLSContext? = nil, connectTimeout: Duration = .seconds(2),
                commandTimeout: Duration = .seconds(2), keepaliveInterval: Duration = .seconds(1),
                clientName: String? = nil, readerLimits: RESPReader.Limits = RESPReader.Limits()) {
        self.endpoint = endpoint
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.keepaliveInterval = keepaliveInterval
        self.clientName = clientName
        self.readerLimits = readerLimits
    }
}

extension Duration {
    /// Whole nanoseconds, saturating (a configured timeout never traps).
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return UInt64.max / 2 }
        return min(whole + UInt64(attoseconds / 1_000_000_000), UInt64.max / 2)
    }
}
