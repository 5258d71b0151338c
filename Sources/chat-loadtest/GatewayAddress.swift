import WebSocket

/// Where the gateway listens, from `--url ws://HOST:PORT[/PATH]` (or wss://).
/// The admin API (PROTOCOL.md §10) is served on the same host and port.
struct GatewayAddress: Sendable {
    var host: String
    var port: Int
    /// The WebSocket path, `/v1/ws` unless the URL names another.
    var path: String
    var tls: Bool

    init(url: String, forceTLS: Bool) throws(LoadTestError) {
        let rest: Substring
        if url.hasPrefix("ws://") {
            rest = url.dropFirst(5)
            tls = forceTLS
        } else if url.hasPrefix("wss://") {
            rest = url.dropFirst(6)
            tls = true
        } else {
            throw LoadTestError("--url must start with ws:// or wss:// (got \(url))")
        }
        let authority = rest.prefix { $0 != "/" }
        let pathPart = rest.dropFirst(authority.count)
        path = pathPart.isEmpty || pathPart == "/" ? "/v1/ws" : String(pathPart)
        let defaultPort = tls ? 443 : 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? -1 : defaultPort
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? -1
        } else {
            host = String(authority)
            port = defaultPort
        }
        guard !host.isEmpty, (1...65535).contains(port) else {
            throw LoadTestError("--url needs a host and a port between 1 and 65535 (got \(url))")
        }
    }

    /// The `Host` header value.
    var hostHeader: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The opening handshake of a chat connection (PROTOCOL.md §1) for `token`.
    func upgrade(token: String, deflate: Bool = false) -> WebSocketClientHandshake {
        WebSocketClientHandshake(host: hostHeader, target: "\(path)?token=\(token)",
                                 extensions: deflate ? Self.deflateOffer : nil)
    }

    /// Context-free both ways, so neither side keeps a zlib stream per connection.
    static let deflateOffer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
}
