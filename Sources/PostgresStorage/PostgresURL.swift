import Foundation
import PostgresNIO
import Storage

/// `storage.postgresUrl` → postgres-nio's client configuration.
enum PostgresURL {
    static func configuration(_ url: String) throws(StoreError) -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
              let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql",
              let host = components.host, !host.isEmpty,
              let user = components.user, !user.isEmpty
        else {
            throw StoreError("storage.postgresUrl must look like postgres://user[:password]@host[:port]/database, got \(redacted(url))")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let tls: PostgresClient.Configuration.TLS
        switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        case let other: throw StoreError("storage.postgresUrl: sslmode \(other) is not one of disable, prefer, require")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? user : database, tls: tls)
        configuration.options.maximumConnections = 8
        configuration.options.minimumConnections = 1
        configuration.options.connectTimeout = .seconds(2)
        return configuration
    }

    /// The URL without its password, for messages and logs.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "(unparseable URL)"
    }
}
