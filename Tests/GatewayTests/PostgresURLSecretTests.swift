import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// `storage.postgresUrl` is a secret: whatever it looks like, neither the configuration check,
/// the start-up failure nor any log line repeats its password. A URL that does not parse (a
/// `#`, space or `%` in an unencoded password) or a bad `sslmode` stops start-up with exit
/// code 2 and a line naming the key.
@Suite("PostgreSQL URL secrets")
struct PostgresURLSecretTests {
    static let secret = "pa55-SECRET-word"

    /// URLs that do not parse, or parse to something unusable, each with the secret in it.
    static let malformed = [
        "postgres://chat:\(secret)#x@127.0.0.1:5432/chat",
        "postgres://chat:\(secret)#@127.0.0.1:5432/chat",
        "postgres://chat:\(secret) x@127.0.0.1:5432/chat",
        "postgres://chat:\(secret)%zz@127.0.0.1:5432/chat",
        "postgres://chat:\(secret)%@127.0.0.1:5432/chat",
        "postgres://chat:\(secret)?x@127.0.0.1:5432/chat",
        "postgres://chat:\(secret)@/chat",
        "postgres://chat:\(secret)@127.0.0.1:99999/chat",
        "postgres:chat:\(secret)@127.0.0.1/chat",
        "mysql://chat:\(secret)@127.0.0.1/chat",
        "\(secret)",
        "postgres://chat:\(secret)@127.0.0.1:5432/chat?sslmode=verify-ca",
        "postgres://chat:\(secret)@127.0.0.1:5432/chat?sslmode=",
        "postgres://chat:\(secret)@127.0.0.1:5432/chat?password=\(secret)",
    ]

    @Test("the configuration check names storage.postgresUrl and never repeats the URL", arguments: malformed)
    func configurationCheck(url: String) throws {
        do {
            _ = try GatewayConfiguration.load(filePath: nil, environment: [
                "CHAT_GATEWAY_STORAGE_BACKEND": "postgres", "CHAT_GATEWAY_STORAGE_POSTGRESURL": url,
            ])
            Issue.record("accepted \(url)")
        } catch {
                        #expect(error.key == "storage.postgresUrl", "\(error)")
            #expect(!error.description.contains(Self.secret), "\(error)")
            #expect(!error.description.contains("SECRET"), "\(error)")
        }
    }

    @Test("a bad sslmode names the key and the allowed values")
    func badSSLMode() throws {
        do {
            _ = try GatewayConfiguration.load(filePath: nil, environment: [
                "CHAT_GATEWAY_STORAGE_BACKEND": "postgres",
                "CHAT_GATEWAY_STORAGE_POSTGRESURL": "postgres://chat@127.0.0.1:5432/chat?sslmode=allow",
            ])
            Issue.record("sslmode=allow was accepted")
        } catch {
                        #expect(error.description == "storage.postgresUrl: sslmode must be disable, require or verify-full")
        }
        for mode in ["disable", "require", "verify-full"] {
            let configuration = try GatewayConfiguration.load(filePath: nil, environment: [
                "CHAT_GATEWAY_STORAGE_BACKEND": "postgres",
                "CHAT_GATEWAY_STORAGE_POSTGRESURL": "postgres://chat@127.0.0.1:5432/chat?sslmode=\(mode)",
            ])
            #expect(configuration.storage.postgresURL?.hasSuffix(mode) == true)
        }
    }

    /// `chat-gateway serve` with `url`: its exit status and everything it wrote (log lines included).
    private func serve(_ url: String, timeoutSeconds: Double = 60) async throws -> (status: Int32, output: String) {
        let binary = try DurabilityTests.gatewayBinary()
        let directory = TestGateway.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CHAT_GATEWAY_") }
        environment["CHAT_GATEWAY_SERVER_PORT"] = "0"
        environment["CHAT_GATEWAY_STORAGE_DATADIRECTORY"] = directory
        environment["CHAT_GATEWAY_STORAGE_BACKEND"] = "postgres"
        environment["CHAT_GATEWAY_STORAGE_POSTGRESURL"] = url
        environment["CHAT_GATEWAY_LOG_LEVEL"] = "debug"
        // Blocking: on a thread of its own, not the cooperative pool the other suites need.
        let finished = try await offThePool {
            UnsafeTransfer(value: try ChildProcess.run(binary.path, ["serve"], environment: environment, timeoutSeconds: timeoutSeconds))
        }
        return finished.value
    }

    @Test("serve with a malformed URL or a bad sslmode: exit code 2, the key named, no secret in any line",
          arguments: malformed)
    func serveRefusesWithoutTheSecret(url: String) async throws {
        let (status, output) = try await serve(url)
        #expect(status == 2, "\(output)")
        #expect(output.contains("storage.postgresUrl"), "\(output)")
        #expect(!output.contains(Self.secret), "\(output)")
    }

    @Test("a URL that parses but cannot connect: gateway.start_failed shows it with the password as ***")
    func unreachableDatabaseHidesThePassword() async throws {
        let port = LoopbackPort.free()
        let (status, output) = try await serve("postgres://chat:\(Self.secret)@127.0.0.1:\(port)/chat")
        #expect(status == 1, "\(output)")
        #expect(output.contains("gateway.start_failed"), "\(output)")
        #expect(output.contains("postgres://chat:***@127.0.0.1:\(port)/chat"), "\(output)")
        #expect(!output.contains(Self.secret), "\(output)")
    }
}
