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
        let parsed: WebSocketURL
        do throws(WebSocketURL.ParseError) {
            parsed = try WebSocketURL(url)
        } catch .scheme {
            throw LoadTestError("--url must start with ws:// or wss:// (got \(url))")
        } catch {
            throw LoadTestError("--url needs a host and a port between 1 and 65535 (got \(url))")
        }
        tls = parsed.secure || forceTLS
        host = parsed.host
        port = parsed.port(secure: tls)
        path = parsed.target == "/" ? "/v1/ws" : parsed.target
    }

    /// The `Host` header value.
    var hostHeader: String { WebSocketURL.hostHeader(host: host, port: port) }

    /// The opening handshake of a chat connection (PROTOCOL.md §1) for `token`.
    func upgrade(token: String, deflate: Bool = false) -> WebSocketClientHandshake {
        WebSocketClientHandshake(host: hostHeader, target: "\(path)?token=\(token)",
                                 extensions: deflate ? Self.deflateOffer : nil)
    }

    /// Context-free both ways, so neither side keeps a zlib stream per connection.
    static let deflateOffer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
}
