import Foundation
import Logging
import PostgresNIO
import ServiceTestSupport
import Storage
import Synchronization
import Testing
@testable import PostgresStorage

/// Whether scripts/postgres can start a server here (Debian's layout).
enum PostgresServerBinaries {
    static let installed = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?
        .contains { FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/pg_ctl") } ?? false
}

/// What `pg_stat_ssl` said of a connection.
private final class EncryptionSeen: Sendable {
    private let seen = Mutex(false)
    func set(_ value: Bool) { seen.withLock { $0 = value } }
    var value: Bool { seen.withLock { $0 } }
}

/// `storage.postgresUrl` `sslmode` against a PostgreSQL of its own, started with ssl=on and a
/// certificate made for the test by a throwaway CA (scripts/gen-test-ca), naming only
/// `localhost`: `require` encrypts without checking it; `verify-full` checks the chain (the
/// CA given as `sslrootcert`, else the system's roots) and that the certificate names the
/// host the URL connects to.
@Suite("PostgreSQL TLS (sslmode)", .enabled(if: PostgresServerBinaries.installed, "no PostgreSQL server installed"))
struct PostgresTLSTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts").path

    /// Whether a store opens on `url`, and whether its connection is encrypted. A connection
    /// that must work gets 30 s (a loaded test machine); one that must fail, `startWait` 5 s.
    private func open(_ url: String, failing: Bool = false) async -> Result<Bool, any Error> {
        let seconds = failing ? 20 : 60
        let logger = Logger(label: "postgres-tls-tests")
        do {
            return .success(try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    _ = try await PostgresStore.open(url: url, logger: logger, startWait: .seconds(failing ? 5 : 30))
                    let encrypted = EncryptionSeen()
                    try await PostgresTestDatabase.withClient(url: url) { client in
                        try await client.withConnection { connection in
                            for try await value in try await connection.query(
                                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: logger).decode(Bool.self) {
                                encrypted.set(value)
                            }
                        }
                    }
                    return encrypted.value
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(seconds))
                    throw StoreError("no connection within \(seconds) s")
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw StoreError("no result") }
                return first
            })
        } catch {
            return .failure(error)
        }
    }

    @Test func requireEncryptsAndVerifyFullChecksChainAndHostName() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-tls-\(UUID().uuidString)").path
        let certificates = directory + "/certs"
        let data = directory + "/data"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The server runs as `postgres` when the tests run as root: it must reach its folder.
        chmod(directory, 0o755)
        defer {
            _ = try? ChildProcess.run(Self.scripts + "/postgres", ["stop", data], timeoutSeconds: 60)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let made = try ChildProcess.run(Self.scripts + "/gen-test-ca", [certificates], timeoutSeconds: 60)
        try #require(made.status == 0, "gen-test-ca: \(made.output)")
        var environment = ProcessInfo.processInfo.environment
        environment["POSTGRES_SSL_CERT"] = certificates + "/server.crt"
        environment["POSTGRES_SSL_KEY"] = certificates + "/server.key"
        let started = try ChildProcess.run(Self.scripts + "/postgres", ["start", data], environment: environment,
                                           timeoutSeconds: 120)
        try #require(started.status == 0, "scripts/postgres: \(started.output)")
        let base = try #require(started.output.split(separator: "\n").last.map(String.init))  // postgres://chat@127.0.0.1:PORT/chat
        let byName = base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let root = "sslrootcert=" + certificates + "/ca.pem"

        // require: encrypted, whatever the certificate says.
        #expect(try await open(base + "?sslmode=require").get() == true)
        // disable: plain.
        #expect(try await open(base + "?sslmode=disable").get() == false)
        // verify-full: the CA given and the name in the certificate: encrypted.
        #expect(try await open(byName + "?sslmode=verify-full&" + root).get() == true)
        // verify-full by IP address: the certificate names only localhost.
        await #expect(throws: (any Error).self, "a certificate that does not name 127.0.0.1") {
            try await open(base + "?sslmode=verify-full&" + root, failing: true).get()
        }
        // verify-full without the test CA: the system's roots do not know it.
        await #expect(throws: (any Error).self, "a chain to a root the system does not trust") {
            try await open(byName + "?sslmode=verify-full", failing: true).get()
        }
    }

    @Test func sslmodeAndItsCompanionsAreChecked() throws {
        #expect(try PostgresURL.parse("postgres://u@h/db").sslMode == .disable)
        #expect(try PostgresURL.parse("postgres://u@h/db?sslmode=require").sslMode == .require)
        #expect(try PostgresURL.parse("postgres://u@h/db?sslmode=verify-full").sslMode == .verifyFull)
        #expect(try PostgresURL.parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem").rootCertificateFile == "/ca.pem")
        for url in ["postgres://u@h/db?sslmode=verify-ca", "postgres://u@h/db?sslmode=", "postgres://u@h/db?sslmode=REQUIRE",
                    "postgres://u@h/db?sslmdoe=require", "postgres://u@h/db?sslmode=require&sslrootcert=/ca.pem"] {
            #expect(throws: PostgresURL.Problem.self, "\(url)") { try PostgresURL.parse(url) }
        }
    }
}
