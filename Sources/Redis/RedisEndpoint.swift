#if canImport(Glibc)
import Glibc
#endif

/// Where and how to reach Redis: `redis://[[user]:password@]host[:port][/db]`, or
/// `rediss://…` for TLS. The host is an IP address (connecting never waits on a name
/// lookup on the event loop; with TLS the server's certificate must name that address).
/// The user and password may be percent-encoded. The password is kept out of every
/// description of the endpoint and of every parse error.
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var usesTLS: Bool
    /// ACL user for `AUTH user password`; nil: `AUTH password` (the default user).
    public var username: String?
    public var password: String?
    /// SELECTed after connecting (0: left as is).
    public var database: Int

    public static let defaultPort = 6379
    public static let maxDatabase = Int(Int32.max)

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public init(host: String, port: Int = RedisEndpoint.defaultPort, usesTLS: Bool = false, username: String? = nil,
                password: String? = nil, database: Int = 0) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
        self.username = username
        self.password = password
        self.database = database
    }

    /// `rediss://user:***@host:port/db`: what a log line may show.
    public var description: String {
        var text = usesTLS ? "rediss://" : "redis://"
        if username != nil || password != nil {
            text += username ?? ""
            if password != nil { text += ":***" }
            text += "@"
        }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)"
        if database != 0 { text += "/\(database)" }
        return text
    }

    public static func parse(_ url: String) throws(ParseError) -> RedisEndpoint {
        var rest: Substring
        let usesTLS: Bool
        if url.hasPrefix("redis://") {
            rest = url.dropFirst("redis://".count)
            usesTLS = false
        } else if url.hasPrefix("rediss://") {
            rest = url.dropFirst("rediss://".count)
            usesTLS = true
        } else {
            throw ParseError(description: "must start with redis:// or rediss://")
        }
        var username: String?
        var password: String?
        // The credentials end at the last '@' (an unencoded '@' in a password stays in it).
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let user = credentials[..<colon]
                username = user.isEmpty ? nil : try decoded(user, "user")
                password = try decoded(credentials[credentials.index(after: colon)...], "password")
            } else {
                // `redis://secret@host` is how several clients spell a password alone.
                password = try decoded(credentials, "password")
            }
            if password?.isEmpty == true { throw ParseError(description: "has an empty password") }
        }
        guard !rest.contains("?"), !rest.contains("#") else {
            throw ParseError(description: "takes no query or fragment")
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard path.allSatisfy(\.isASCIIDigit), path.count <= 10, let number = Int(path),
                      number <= maxDatabase else {
                    throw ParseError(description: "database must be a number from 0 to \(maxDatabase)")
                }
                database = number
            }
        }
        let host: String
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw ParseError(description: "has an unclosed [") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError(description: "has text after ]") }
                portText = after.dropFirst()
            }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw ParseError(description: "has more than one port") }
            host = String(parts[0])
            if parts.count == 2 { portText = parts[1] }
        }
        guard isIPAddress(host) else { throw ParseError(description: "host must be an IP address") }
        var port = defaultPort
        if let portText {
            guard portText.allSatisfy(\.isASCIIDigit), portText.count <= 5, let number = Int(portText),
                  (1...65535).contains(number) else {
                throw ParseError(description: "port must be a number from 1 to 65535")
            }
            port = number
        }
        return RedisEndpoint(host: host, port: port, usesTLS: usesTLS, username: username, password: password,
                             database: database)
    }

    /// What a configured Redis URL names: one Redis (`parse`, a database allowed), or, when it
    /// holds a comma, the seed nodes of a Redis Cluster (`parseList`). Never empty.
    public static func parseOneOrSeeds(_ url: String) throws(ParseError) -> [RedisEndpoint] {
        url.contains(",") ? try parseList(url) : [try parse(url)]
    }

    /// The seed nodes of a Redis Cluster, comma separated: `redis://[cred@]h1:p1,h2:p2,...`.
    /// The first element is a full URL; each later one is either a full URL too or just
    /// `host[:port]` (`[v6]:port`), which takes the first one's scheme and credentials.
    /// Every node of a cluster is reached alike, so all must agree on TLS, and none may
    /// name a database (a cluster has only database 0). A comma in a password is written
    /// `%2C`. Duplicates are dropped; the order is kept (the client asks seeds in it).
    public static func parseList(_ list: String) throws(ParseError) -> [RedisEndpoint] {
        let elements = list.split(separator: ",", omittingEmptySubsequences: false)
            .map(trimmingSpaces)
        guard let first = elements.first, !first.isEmpty else { throw ParseError(description: "lists no node") }
        var endpoints: [RedisEndpoint] = []
        for (number, element) in elements.enumerated() {
            guard !element.isEmpty else { throw ParseError(description: "node \(number + 1) of the list is empty") }
            var endpoint: RedisEndpoint
            if element.hasPrefix("redis://") || element.hasPrefix("rediss://") {
                endpoint = try parse(element)
            } else if let template = endpoints.first {
                guard !element.contains("@"), !element.contains("/") else {
                    throw ParseError(description: "node \(number + 1) of the list: a bare host:port takes no credentials or path")
                }
                endpoint = try parse((template.usesTLS ? "rediss://" : "redis://") + element)
                endpoint.username = template.username
                endpoint.password = template.password
            } else {
                throw ParseError(description: "must start with redis:// or rediss://")
            }
            guard endpoint.database == 0 else {
                throw ParseError(description: "node \(number + 1) names a database (a cluster has only database 0)")
            }
            if let template = endpoints.first, endpoint.usesTLS != template.usesTLS {
                throw ParseError(description: "node \(number + 1) differs from the first in TLS")
            }
            if !endpoints.contains(where: { $0.host == endpoint.host && $0.port == endpoint.port }) {
                endpoints.append(endpoint)
            }
        }
        return endpoints
    }

    private static func trimmingSpaces(_ text: Substring) -> String {
        var text = text
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return String(text)
    }

    /// An IPv4 or IPv6 address in text form (no name: nothing here resolves one).
    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Percent-decoding; the error names the part, never its text.
    private static func decoded(_ text: Substring, _ part: String) throws(ParseError) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw ParseError(description: "\(part) has a bad %-escape")
            }
            bytes.append(high << 4 | low)
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw ParseError(description: "\(part) is not UTF-8")
        }
        return string
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
