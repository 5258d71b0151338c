/// A `ws://` or `wss://` URI (RFC 6455 §3) split into what a client needs: the host to connect
/// to (an IPv6 address without its brackets), the port when the URI names one, whether it is
/// `wss`, and the request target (path and query; `/` when the URI has neither).
public struct WebSocketURL: Sendable, Equatable {
    public enum ParseError: Error, Equatable {
        /// Neither `ws://` nor `wss://`.
        case scheme
        /// No host, or a port that is not a number in 1…65535.
        case hostOrPort
    }

    public var host: String
    public var port: Int?
    public var secure: Bool
    public var target: String

    public init(_ text: String) throws(ParseError) {
        let rest: Substring
        if text.hasPrefix("ws://") {
            rest = text.dropFirst(5)
            secure = false
        } else if text.hasPrefix("wss://") {
            rest = text.dropFirst(6)
            secure = true
        } else {
            throw .scheme
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let after = rest.dropFirst(authority.count)
        target = after.isEmpty ? "/" : after.hasPrefix("?") ? "/" + after : String(after)
        let portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .hostOrPort }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let tail = authority[authority.index(after: close)...]
            guard tail.isEmpty || tail.hasPrefix(":") else { throw .hostOrPort }
            portText = tail.isEmpty ? nil : tail.dropFirst()
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
            portText = nil
        }
        if let portText {
            guard let port = Int(portText), (1...65535).contains(port) else { throw .hostOrPort }
            self.port = port
        }
        guard !host.isEmpty else { throw .hostOrPort }
    }

    /// The port to connect to: the URI's, else 443 when `secure`, else 80. A caller may ask for
    /// TLS on a `ws://` URI, so whether the connection is secure is its argument.
    public func port(secure: Bool) -> Int { port ?? (secure ? 443 : 80) }

    /// The `Host` header for `host` and `port` (an IPv6 address in brackets).
    public static func hostHeader(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
