import WebSocket

/// Who may sign in to the web console by picking a user name (PROTOCOL.md §14):
/// only a gateway that signs tokens with the published development secret, on a
/// loopback listener, and only requests that name a loopback host.
///
/// With the dev secret anyone who can reach the gateway can already forge a token
/// for any user (the secret is public), so the name picker gives away nothing the
/// listener does not; it is still kept to loopback listeners, where start-up alone
/// allows the dev secret. The `Host` check stops DNS rebinding: a web page from
/// elsewhere whose name the attacker points at 127.0.0.1 sends its own host name,
/// and is answered as if the endpoint did not exist. An `Origin`, when sent, must be
/// loopback too, so no other site's script can ask for a token.
struct DevSignIn: Sendable {
    /// How long a dev sign-in token lives: a working day.
    static let tokenTTLSeconds: Int64 = 12 * 3600

    /// Whether this gateway offers the name picker at all.
    let isOffered: Bool

    init(jwtSecret: String, listenerHost: String) {
        isOffered = jwtSecret == GatewayConfiguration.Auth.developmentSecret
            && GatewayConfiguration.Server.isLoopback(listenerHost)
    }

    /// Whether `request` may use the name picker: offered here, a loopback `Host`,
    /// and no `Origin` or a loopback one.
    func admits(_ request: HTTPRequest) -> Bool {
        guard isOffered, let host = request.header("Host"), Self.namesLoopback(authority: host) else { return false }
        guard let origin = request.header("Origin") else { return true }
        return Self.isLoopbackOrigin(origin)
    }

    /// `127.0.0.1:8080`, `localhost`, `[::1]:9300` → true; any other name or address → false.
    static func namesLoopback(authority: String) -> Bool {
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            host = authority[authority.startIndex...close]
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || Self.isPortSuffix(rest) else { return false }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            guard Self.isPortSuffix(authority[colon...]) else { return false }
        } else {
            host = authority[...]
        }
        return GatewayConfiguration.Server.isLoopback(host.lowercased())
    }

    /// `http://127.0.0.1:8080` or `https://localhost` → true.
    static func isLoopbackOrigin(_ origin: String) -> Bool {
        for scheme in ["http://", "https://"] where origin.lowercased().hasPrefix(scheme) {
            return namesLoopback(authority: String(origin.dropFirst(scheme.count)))
        }
        return false
    }

    private static func isPortSuffix(_ text: Substring) -> Bool {
        guard text.first == ":" else { return false }
        let digits = text.dropFirst()
        return !digits.isEmpty && digits.count <= 5 && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
    }
}
