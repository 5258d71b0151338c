import Foundation
import PostgresNIO
import Storage

/// `storage.postgresUrl` → postgres-nio's client configuration:
/// `postgres://user[:password]@host[:port]/database[?sslmode=…&sslrootcert=…]`.
///
/// The URL is a secret (it may hold a password), so no message made here repeats it or any
/// part of it that is not known to be safe: a URL that does not parse (a `#`, `%` or space in
/// an unencoded password, say) is reported by what is wrong with it, never by what it says.
enum PostgresURL {
    /// How the connection uses TLS (libpq's names).
    enum SSLMode: String, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, unverified (kept from before `verify-full`).
        case prefer
        /// TLS or no connection; the server's certificate is not checked (encryption only).
        case require
        /// TLS, and the certificate must chain to a trusted root (`sslrootcert`, else the
        /// system's) and name the host the URL connects to (a DNS name or an IP address).
        case verifyFull = "verify-full"
    }

    /// What is wrong with a URL, without the URL (the message of `StoreError` after "storage.postgresUrl: ").
    struct Problem: Error {
        var text: String
        init(_ text: String) { self.text = text }

        var storeError: StoreError { StoreError("storage.postgresUrl: " + text) }
    }

    static let shape = "must look like postgres://user[:password]@host[:port]/database[?sslmode=disable|require|verify-full]"
        + " (percent-encode #, %, @, /, ?, : and spaces in the user name and password)"

    /// What the URL says, checked.
    struct Parts {
        var host: String
        var port: Int
        var user: String
        var password: String?
        var database: String
        var sslMode: SSLMode
        /// `sslrootcert`: a PEM file of the roots `verify-full` trusts instead of the system's.
        var rootCertificateFile: String?
    }

    static func parse(_ url: String) throws(Problem) -> Parts {
        // RFC 3986 has no raw spaces or controls, and `%` starts exactly two hex digits;
        // URLComponents would accept some of these by guessing what was meant.
        guard Self.isWellFormed(url), let components = URLComponents(string: url),
              let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql",
              components.fragment == nil,
              let host = components.host, !host.isEmpty,
              let user = components.user, !user.isEmpty,
              (1...65535).contains(components.port ?? 5432)
        else {
            throw Problem(shape)
        }
        var sslMode = SSLMode.disable
        var rootCertificateFile: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(SSLMode.init(rawValue:)) else {
                    throw Problem("sslmode must be disable, require or verify-full")
                }
                sslMode = mode
            case "sslrootcert":
                guard let path = item.value, !path.isEmpty else {
                    throw Problem("sslrootcert must name a PEM file")
                }
                rootCertificateFile = path
            default:
                throw Problem("only the query parameters sslmode and sslrootcert are read")
            }
        }
        if rootCertificateFile != nil && sslMode != .verifyFull {
            throw Problem("sslrootcert is only read with sslmode=verify-full")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return Parts(host: host, port: components.port ?? 5432, user: user, password: components.password,
                     database: database.isEmpty ? user : database, sslMode: sslMode, rootCertificateFile: rootCertificateFile)
    }

    /// No whitespace, control or non-ASCII character, and every `%` followed by two hex digits.
    private static func isWellFormed(_ url: String) -> Bool {
        let bytes = Array(url.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte > 0x20, byte < 0x7F else { return false }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else { return false }
                index += 3
                continue
            }
            index += 1
        }
        return true
    }

    static func configuration(_ url: String) throws(Problem) -> PostgresClient.Configuration {
        let parts = try parse(url)
        var configuration = PostgresClient.Configuration(
            host: parts.host, port: parts.port, username: parts.user, password: parts.password,
            database: parts.database, tls: try tls(parts))
        configuration.options.maximumConnections = 8
        configuration.options.minimumConnections = 1
        configuration.options.connectTimeout = .seconds(2)
        return configuration
    }

    private static func tls(_ parts: Parts) throws(Problem) -> PostgresClient.Configuration.TLS {
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        switch parts.sslMode {
        case .disable:
            return .disable
        case .prefer:
            return .prefer(unverified)
        case .require:
            return .require(unverified)
        case .verifyFull:
            var verified = TLSConfiguration.makeClientConfiguration()
            // Chain and host name (NIOSSL checks the name against the URL's host, or its IP
            // address when the host is one).
            verified.certificateVerification = .fullVerification
            if let file = parts.rootCertificateFile {
                do {
                    verified.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file))
                } catch {
                    throw Problem("sslrootcert \(file) is not a readable PEM file of certificates")
                }
            }
            return .require(verified)
        }
    }

    /// The URL without its password, for messages and logs; one that does not parse shows
    /// only that it is there (whatever it holds may be a password in the wrong place).
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.fragment == nil, components.host != nil else {
            return "(storage.postgresUrl, which does not parse as a URL)"
        }
        if components.password != nil { components.password = "***" }
        return components.string ?? "(storage.postgresUrl)"
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}
