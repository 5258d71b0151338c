import Foundation
import ServiceTestSupport
import Logging
import Testing
import ChatCore

import EventLoop
@testable import Gateway

@Suite struct ConfigurationTests {
    // MARK: Sources and precedence

    @Test func defaultsWithNoFileAndNoEnvironment() throws {
        let configuration = try GatewayConfiguration.load(filePath: nil, environment: [:])
        #expect(configuration == GatewayConfiguration())
        #expect(configuration.server.host == "127.0.0.1")
        #expect(configuration.server.port == 8080)
        #expect(configuration.server.allowedOrigins == [])
        #expect(configuration.server.eventLoops == min(EventLoopGroup.schedulableProcessorCount, 64))
        #expect(configuration.storage.dataDirectory == "./data")
        #expect(configuration.blocking == .init(mode: .standard, revealBlockedBy: false, excludeFromInvitations: false))
        #expect(configuration.limits == .init(
            userMessagesPerSecond: 5, userMessageBurst: 5, openChannelMessagesPerSecond: 5,
            maxConnectionsPerUser: 30, maxTextLength: 5000, maxMessageBytes: 65536,
            maxQueuedOutputBytes: 4_194_304, handshakeTimeoutSeconds: 10,
            idleTimeoutSeconds: 60, pongTimeoutSeconds: 30, closeTimeoutSeconds: 5
        ))
        #expect(configuration.push == .init(sink: .none, file: nil, webhookUrl: nil))
        #expect(configuration.log.level == .info)
        #expect(configuration.shutdown.drainSeconds == 10)
        #expect(configuration.conformance.echo == false)
        #expect(!configuration.isTLS)
        #expect(configuration.usesDevSecrets)
        #expect(configuration.devSecretKeys.map(\.key) == ["auth.jwtSecret", "admin.apiKey"])
    }

    @Test func fileValuesOverrideDefaults() throws {
        let json = """
            {
              "$comment": "ignored",
              "server": {"port": 9001, "allowedOrigins": ["https://a.example"], "eventLoops": 2, "$comment": "also ignored"},
              "blocking": {"mode": "strict"},
              "limits": {"maxMessageBytes": 16777216, "idleTimeoutSeconds": 1e3},
              "push": {"sink": "file", "file": "push.jsonl"},
              "log": {"level": "warning"},
              "tls": {"certificateFile": null},
              "conformance": {"echo": true}
            }
            """
        let configuration = try withConfigFile(json) { try GatewayConfiguration.load(filePath: $0, environment: [:]) }
        #expect(configuration.server.port == 9001)
        #expect(configuration.server.allowedOrigins == ["https://a.example"])
        #expect(configuration.server.eventLoops == 2)
        #expect(configuration.blocking.mode == .strict)
        #expect(configuration.blocking.revealBlockedBy, "strict mode reveals by default")
        #expect(configuration.limits.maxMessageBytes == 16_777_216)
        #expect(configuration.limits.idleTimeoutSeconds == 1000)
        #expect(configuration.push == .init(sink: .file, file: "push.jsonl", webhookUrl: nil))
        #expect(configuration.log.level == .warning)
        #expect(configuration.conformance.echo)
        #expect(configuration.server.host == "127.0.0.1", "keys the file leaves out keep their defaults")
    }

    @Test func strictModeCanStillHideBlockedBy() throws {
        let json = #"{"blocking": {"mode": "strict", "revealBlockedBy": false}}"#
        let configuration = try withConfigFile(json) { try GatewayConfiguration.load(filePath: $0, environment: [:]) }
        #expect(configuration.blocking.mode == .strict)
        #expect(!configuration.blocking.revealBlockedBy)
    }

    @Test func environmentOverridesFile() throws {
        let json = #"{"server": {"port": 9001, "host": "10.0.0.1"}, "log": {"level": "debug"}}"#
        let environment = [
            "CHAT_GATEWAY_SERVER_PORT": "9002",
            "CHAT_GATEWAY_SERVER_ALLOWEDORIGINS": "https://a.example, https://b.example,",
            "CHAT_GATEWAY_AUTH_JWTSECRET": "jwt-from-env-0123456789abcdef0123456789",
            "CHAT_GATEWAY_ADMIN_APIKEY": "admin-key-from-env-0123456789",
            "CHAT_GATEWAY_CONFORMANCE_ECHO": "true",
            "CHAT_GATEWAY_BLOCKING_EXCLUDEFROMINVITATIONS": "1",
            "CHAT_GATEWAY_LIMITS_MAXTEXTLENGTH": "100",
            "CHAT_GATEWAY_LOG_LEVEL": "error",
            "CHAT_GATEWAY_TLS_CERTIFICATEFILE": "",
            "PATH": "/usr/bin",
        ]
        let configuration = try withConfigFile(json) {
            try GatewayConfiguration.load(filePath: $0, environment: environment)
        }
        #expect(configuration.server.port == 9002)
        #expect(configuration.server.host == "10.0.0.1")
        #expect(configuration.server.allowedOrigins == ["https://a.example", "https://b.example"])
        #expect(configuration.auth.jwtSecret == "jwt-from-env-0123456789abcdef0123456789")
        #expect(configuration.admin.apiKey == "admin-key-from-env-0123456789")
        #expect(configuration.conformance.echo)
        #expect(configuration.blocking.excludeFromInvitations)
        #expect(configuration.limits.maxTextLength == 100)
        #expect(configuration.log.level == .error)
        #expect(configuration.tls.certificateFile == nil, "an empty value unsets an optional key")
        #expect(!configuration.usesDevSecrets)
    }

    @Test func environmentWithoutFile() throws {
        let configuration = try GatewayConfiguration.load(
            filePath: nil,
            environment: ["CHAT_GATEWAY_ADMIN_APIKEY": "admin-key-from-env-0123456789"]
        )
        #expect(configuration.admin.apiKey == "admin-key-from-env-0123456789")
        #expect(configuration.usesDevSecrets, "the JWT secret is still the dev one")
        #expect(configuration.devSecretKeys.map(\.key) == ["auth.jwtSecret"], "only the JWT secret is named")
        #expect(configuration.devSecretKeys.map(\.environmentVariable) == ["CHAT_GATEWAY_AUTH_JWTSECRET"])
    }

    @Test func postgresBackendNeedsItsURL() throws {
        let error = loadError(environment: ["CHAT_GATEWAY_STORAGE_BACKEND": "postgres"])
        expectOneLine(error, naming: "storage.postgresUrl")
        expectOneLine(loadError(environment: ["CHAT_GATEWAY_STORAGE_BACKEND": "mysql"]), naming: "storage.backend")
        let configuration = try GatewayConfiguration.load(filePath: nil, environment: [
            "CHAT_GATEWAY_STORAGE_BACKEND": "postgres",
            "CHAT_GATEWAY_STORAGE_POSTGRESURL": "postgres://chat:pw@127.0.0.1:5432/chat",
        ])
        #expect(configuration.storage.backend == .postgres)
        #expect(configuration.storage.postgresURL == "postgres://chat:pw@127.0.0.1:5432/chat")
        #expect(try GatewayConfiguration.load(filePath: nil, environment: [:]).storage.backend == .sqlite)
    }

    @Test func tlsWithExistingFiles() throws {
        let configuration = try withConfigFile("-----BEGIN CERTIFICATE-----\n", name: "cert.pem") { certificate in
            try GatewayConfiguration.load(
                filePath: nil,
                environment: [
                    "CHAT_GATEWAY_TLS_CERTIFICATEFILE": certificate,
                    "CHAT_GATEWAY_TLS_PRIVATEKEYFILE": certificate,
                ]
            )
        }
        #expect(configuration.isTLS)
    }

    // MARK: Bundled files

    @Test func bundledDefaultFileEqualsBuiltInDefaults() throws {
        let configuration = try GatewayConfiguration.load(filePath: Self.bundled("gateway.json"), environment: [:])
        #expect(configuration == GatewayConfiguration())
    }

    @Test func bundledConformanceFile() throws {
        let configuration = try GatewayConfiguration.load(filePath: Self.bundled("conformance.json"), environment: [:])
        #expect(configuration.server.port == 9001)
        #expect(configuration.conformance.echo)
        #expect(configuration.limits.maxMessageBytes == 16 * 1024 * 1024)
        #expect(configuration.limits.maxQueuedOutputBytes > configuration.limits.maxMessageBytes)
        #expect(configuration.log.level == .warning)
    }

    @Test func bundledProductionFileDemandsSecretsThenCertificates() throws {
        let path = Self.bundled("gateway.production.json")
        let withoutSecrets = loadError(file: path)
        #expect(withoutSecrets == .invalidValue(key: "auth.jwtSecret", problem: "must not be empty (set CHAT_GATEWAY_AUTH_JWTSECRET)"))
        let withSecrets = loadError(file: path, environment: [
            "CHAT_GATEWAY_AUTH_JWTSECRET": String(repeating: "s", count: 32),
            "CHAT_GATEWAY_ADMIN_APIKEY": String(repeating: "k", count: 24),
        ])
        #expect(withSecrets == .fileNotFound(key: "tls.certificateFile", path: "/etc/chat-gateway/tls/fullchain.pem"))
    }

    // MARK: Errors

    @Test(arguments: [
        (#"{"server": {"prot": 1}}"#, "server.prot"),
        (#"{"bogus": {"x": 1}}"#, "bogus"),
        (#"{"limits": {"maxMessageSize": 1}}"#, "limits.maxMessageSize"),
    ])
    func unknownKeyInFile(json: String, key: String) {
        withConfigFile(json) { path in
            let error = loadError(file: path)
            #expect(error == .unknownKey(key: key, file: path))
            expectOneLine(error, naming: key)
        }
    }

    @Test func unknownEnvironmentVariable() {
        let error = loadError(environment: ["CHAT_GATEWAY_SERVER_PROT": "1"])
        #expect(error == .unknownEnvironmentVariable(name: "CHAT_GATEWAY_SERVER_PROT"))
        expectOneLine(error, naming: "CHAT_GATEWAY_SERVER_PROT")
    }

    @Test func camelCaseEnvironmentSpellingIsUnknown() {
        let error = loadError(environment: ["CHAT_GATEWAY_AUTH_JWT_SECRET": "s"])
        #expect(error == .unknownEnvironmentVariable(name: "CHAT_GATEWAY_AUTH_JWT_SECRET"))
    }

    @Test(arguments: [
        (#"{"server": {"port": "9001"}}"#, "server.port", "an integer"),
        (#"{"server": {"port": true}}"#, "server.port", "an integer"),
        (#"{"limits": {"maxTextLength": 1.5}}"#, "limits.maxTextLength", "an integer"),
        (#"{"conformance": {"echo": 1}}"#, "conformance.echo", "a boolean"),
        (#"{"conformance": {"echo": "true"}}"#, "conformance.echo", "a boolean"),
        (#"{"server": {"allowedOrigins": "https://a.example"}}"#, "server.allowedOrigins", "an array of strings"),
        (#"{"server": {"allowedOrigins": [1]}}"#, "server.allowedOrigins", "an array of strings"),
        (#"{"auth": {"jwtSecret": 42}}"#, "auth.jwtSecret", "a string"),
        (#"{"server": {"port": {"value": 1}}}"#, "server.port", "an integer"),
        (#"{"server": 8080}"#, "server", "an object"),
    ])
    func wrongTypeInFile(json: String, key: String, expected: String) {
        withConfigFile(json) { path in
            let error = loadError(file: path)
            #expect(error == .wrongType(key: key, expected: expected, source: path))
            expectOneLine(error, naming: key)
        }
    }

    @Test(arguments: [
        ("CHAT_GATEWAY_SERVER_PORT", "abc", "server.port"),
        ("CHAT_GATEWAY_CONFORMANCE_ECHO", "maybe", "conformance.echo"),
        ("CHAT_GATEWAY_LIMITS_MAXTEXTLENGTH", "5k", "limits.maxTextLength"),
    ])
    func wrongTypeInEnvironment(variable: String, value: String, key: String) {
        let error = loadError(environment: [variable: value])
        #expect(error?.key == key)
        if case .wrongType(_, _, let source) = error {
            #expect(source == variable)
        } else {
            Issue.record("expected wrongType, got \(String(describing: error))")
        }
        expectOneLine(error, naming: key)
    }

    @Test(arguments: [
        ("CHAT_GATEWAY_BLOCKING_MODE", "lenient", "blocking.mode"),
        ("CHAT_GATEWAY_PUSH_SINK", "sms", "push.sink"),
        ("CHAT_GATEWAY_LOG_LEVEL", "verbose", "log.level"),
    ])
    func badEnumValue(variable: String, value: String, key: String) {
        let error = loadError(environment: [variable: value])
        guard case .invalidValue(key, let problem) = error else {
            Issue.record("expected invalidValue for \(key), got \(String(describing: error))")
            return
        }
        #expect(problem.contains("\"\(value)\""))
        expectOneLine(error, naming: key)
    }

    @Test(arguments: [
        ("CHAT_GATEWAY_SERVER_PORT", "65536", "server.port"),
        ("CHAT_GATEWAY_SERVER_PORT", "-1", "server.port"),
        ("CHAT_GATEWAY_SERVER_EVENTLOOPS", "0", "server.eventLoops"),
        ("CHAT_GATEWAY_SERVER_EVENTLOOPS", "65", "server.eventLoops"),
        ("CHAT_GATEWAY_LIMITS_MAXCONNECTIONSPERUSER", "0", "limits.maxConnectionsPerUser"),
        ("CHAT_GATEWAY_LIMITS_PONGTIMEOUTSECONDS", "-5", "limits.pongTimeoutSeconds"),
        ("CHAT_GATEWAY_LIMITS_USERMESSAGESPERSECOND", "-1", "limits.userMessagesPerSecond"),
        ("CHAT_GATEWAY_LIMITS_USERMESSAGEBURST", "0", "limits.userMessageBurst"),
        ("CHAT_GATEWAY_SHUTDOWN_DRAINSECONDS", "-1", "shutdown.drainSeconds"),
        ("CHAT_GATEWAY_SERVER_HOST", "", "server.host"),
        ("CHAT_GATEWAY_AUTH_JWTSECRET", "", "auth.jwtSecret"),
        ("CHAT_GATEWAY_TLS_TICKETKEYROTATIONSECONDS", "-1", "tls.ticketKeyRotationSeconds"),
        ("CHAT_GATEWAY_LIMITS_MAXREQUESTSINFLIGHT", "0", "limits.maxRequestsInFlight"),
        ("CHAT_GATEWAY_LIMITS_SLOWCONSUMERSECONDS", "0", "limits.slowConsumerSeconds"),
    ])
    func outOfRange(variable: String, value: String, key: String) {
        let error = loadError(environment: [variable: value])
        guard case .invalidValue(key, _) = error else {
            Issue.record("expected invalidValue for \(key), got \(String(describing: error))")
            return
        }
        expectOneLine(error, naming: key)
    }

    @Test func zeroTurnsMessageRatesOff() throws {
        let configuration = try GatewayConfiguration.load(filePath: nil, environment: [
            "CHAT_GATEWAY_LIMITS_USERMESSAGESPERSECOND": "0", "CHAT_GATEWAY_LIMITS_OPENCHANNELMESSAGESPERSECOND": "0",
        ])
        #expect(configuration.limits.userMessagesPerSecond == 0)
        #expect(configuration.limits.openChannelMessagesPerSecond == 0)
        let settings = ChatEngine.Settings(configuration)
        #expect(settings.userMessagesPerSecond == 0)
        #expect(settings.openChannelMessagesPerSecond == 0)
    }

    @Test func ephemeralPortZeroIsAllowed() throws {
        let configuration = try GatewayConfiguration.load(filePath: nil, environment: ["CHAT_GATEWAY_SERVER_PORT": "0"])
        #expect(configuration.server.port == 0)
    }

    @Test func halfTLSConfiguration() {
        let onlyCertificate = loadError(environment: ["CHAT_GATEWAY_TLS_CERTIFICATEFILE": "/tmp/cert.pem"])
        #expect(onlyCertificate?.key == "tls.privateKeyFile")
        expectOneLine(onlyCertificate, naming: "tls.privateKeyFile")
        let onlyKey = loadError(environment: ["CHAT_GATEWAY_TLS_PRIVATEKEYFILE": "/tmp/key.pem"])
        #expect(onlyKey?.key == "tls.certificateFile")
    }

    @Test func missingTLSFile() {
        withConfigFile("key", name: "key.pem") { existingKey in
            let missing = existingKey + ".missing"
            let json = #"{"tls": {"certificateFile": "\#(missing)", "privateKeyFile": "\#(existingKey)"}}"#
            withConfigFile(json) { path in
                let error = loadError(file: path)
                #expect(error == .fileNotFound(key: "tls.certificateFile", path: missing))
                expectOneLine(error, naming: "tls.certificateFile")
            }
        }
    }

    @Test func pushSinkRequirements() {
        let file = loadError(environment: ["CHAT_GATEWAY_PUSH_SINK": "file"])
        #expect(file?.key == "push.file")
        let webhook = loadError(environment: ["CHAT_GATEWAY_PUSH_SINK": "webhook"])
        #expect(webhook?.key == "push.webhookUrl")
        let notHTTP = loadError(environment: [
            "CHAT_GATEWAY_PUSH_SINK": "webhook", "CHAT_GATEWAY_PUSH_WEBHOOKURL": "ftp://example.com/push",
        ])
        #expect(notHTTP?.key == "push.webhookUrl")
    }

    @Test(arguments: ["{\"server\": {\"port\": 1}", "[]", "", "port = 1", "{\"server\": }"])
    func invalidJSONNamesTheFile(json: String) {
        withConfigFile(json) { path in
            let error = loadError(file: path)
            guard case .invalidJSON(path, _) = error else {
                Issue.record("expected invalidJSON for \(path), got \(String(describing: error))")
                return
            }
            expectOneLine(error, naming: path)
        }
    }

    @Test func missingFileNamesTheFile() {
        let path = "/nonexistent/gateway.json"
        let error = loadError(file: path)
        guard case .unreadableFile(path, _) = error else {
            Issue.record("expected unreadableFile, got \(String(describing: error))")
            return
        }
        expectOneLine(error, naming: path)
    }

    @Test("an admin or metrics key shorter than 24 bytes stops start-up", arguments: [
        ("CHAT_GATEWAY_ADMIN_APIKEY", "admin.apiKey"), ("CHAT_GATEWAY_METRICS_APIKEY", "metrics.apiKey"),
    ])
    func shortKeys(variable: String, key: String) throws {
        let error = loadError(environment: [variable: String(repeating: "k", count: 23)])
        #expect(error == .invalidValue(key: key, problem: "must be at least 24 bytes"))
        _ = try GatewayConfiguration.load(filePath: nil, environment: [variable: String(repeating: "k", count: 24)])
    }

    @Test("the published dev secret or dev key stops start-up on a non-loopback host", arguments: ["0.0.0.0", "10.0.0.1", "::", "chat.example"])
    func devSecretsOnlyOnLoopback(host: String) throws {
        let secret = String(repeating: "s", count: 32)
        let key = String(repeating: "k", count: 24)
        let onlyDevSecret = loadError(environment: ["CHAT_GATEWAY_SERVER_HOST": host, "CHAT_GATEWAY_ADMIN_APIKEY": key])
        guard case .invalidValue("auth.jwtSecret", let problem)? = onlyDevSecret else {
            Issue.record("expected auth.jwtSecret refused, got \(String(describing: onlyDevSecret))")
            return
        }
        #expect(problem.contains("loopback"))
        let onlyDevKey = loadError(environment: ["CHAT_GATEWAY_SERVER_HOST": host, "CHAT_GATEWAY_AUTH_JWTSECRET": secret])
        guard case .invalidValue("admin.apiKey", _)? = onlyDevKey else {
            Issue.record("expected admin.apiKey refused, got \(String(describing: onlyDevKey))")
            return
        }
        let own = try GatewayConfiguration.load(filePath: nil, environment: [
            "CHAT_GATEWAY_SERVER_HOST": host, "CHAT_GATEWAY_AUTH_JWTSECRET": secret, "CHAT_GATEWAY_ADMIN_APIKEY": key,
        ])
        #expect(own.server.host == host)
        for loopback in ["127.0.0.1", "127.1.2.3", "localhost", "::1"] {
            #expect(try GatewayConfiguration.load(filePath: nil, environment: ["CHAT_GATEWAY_SERVER_HOST": loopback]).usesDevSecrets)
        }
    }

    @Test func secretValuesNeverAppearInErrors() {
        withConfigFile(#"{"auth": {"jwtSecret": 123456789}}"#) { path in
            let error = loadError(file: path)
            #expect(error.map { !$0.description.contains("123456789") } ?? false)
        }
    }

    // MARK: Event loops

    /// The default follows the CPUs the process may run on, not the machine's:
    /// two loops time-slicing one core only lengthen each other's passes.
    @Test func pinnedToOneCoreTheDefaultIsOneEventLoop() throws {
        let taskset = ["/usr/bin/taskset", "/bin/taskset"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let tasksetPath = try #require(taskset, "taskset (util-linux) is needed")
        let (status, text) = try ChildProcess.run(
            tasksetPath, ["-c", "0", try DurabilityTests.gatewayBinary().path, "check-config"],
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("CHAT_GATEWAY_") })
        #expect(status == 0, "\(text)")
        #expect(text.contains(", 1 event loop)"), "\(text)")
    }
}

// MARK: - Helpers

extension ConfigurationTests {
    static func bundled(_ name: String) -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // GatewayTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // package root
            .appendingPathComponent("Config")
            .appendingPathComponent(name)
            .path
    }
}

/// The error `load` throws, or nil (recorded as an issue) if it succeeds.
private func loadError(file: String? = nil, environment: [String: String] = [:]) -> ConfigurationError? {
    do {
        let configuration = try GatewayConfiguration.load(filePath: file, environment: environment)
        Issue.record("expected a ConfigurationError, loaded \(configuration)")
        return nil
    } catch {
        return error
    }
}

private func expectOneLine(
    _ error: ConfigurationError?,
    naming subject: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let description = error?.description ?? ""
    #expect(description.contains(subject), "\"\(description)\" should name \(subject)", sourceLocation: sourceLocation)
    #expect(!description.contains("\n"), sourceLocation: sourceLocation)
}

/// Runs `body` with the path of a temporary file holding `contents`.
private func withConfigFile<Result>(
    _ contents: String,
    name: String = "gateway.json",
    _ body: (String) throws -> Result
) rethrows -> Result {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("gateway-config-tests-\(UUID().uuidString)")
    let file = directory.appendingPathComponent(name)
    // A failure here makes the test fail on the missing file, with its path.
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try? Data(contents.utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(file.path)
}
