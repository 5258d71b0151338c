import Foundation
import ServiceTestSupport
import ChatCore
import Logging
@testable import Gateway

/// A gateway on 127.0.0.1 port 0 for one test, stopped when released.
final class TestGateway {
    let server: GatewayServer
    let port: Int
    let tls: Bool
    /// Set for chat gateways: their data folder, clock and secrets.
    private(set) var dataDirectory: String?
    private(set) var clock = ManualClock(Milliseconds(Date().timeIntervalSince1970 * 1000))
    private(set) var chat = GatewayConfiguration()

    /// A chat gateway (`/v1/ws`, admin API) over a fresh SQLite folder, with a
    /// manual clock starting at the real time.
    static func chat(
        tls: Bool = false, dataDirectory: String? = nil, logger: Logger = TestGateway.suiteLogger,
        configure: (inout TransportSettings, inout GatewayConfiguration) -> Void = { _, _ in }
    ) async throws -> TestGateway {
        var settings = TransportSettings()
        settings.port = 0
        settings.eventLoops = 2
        if tls {
            let pair = try DevelopmentCertificate.ecdsa.get()
            settings.certificateFile = pair.certificate
            settings.privateKeyFile = pair.key
        }
        var chat = GatewayConfiguration()
        chat.storage.dataDirectory = dataDirectory ?? TestGateway.temporaryDirectory()
        // Message rates are off unless a test is about them (ThrottleTests turn them on).
        chat.limits.userMessagesPerSecond = 0
        chat.limits.openChannelMessagesPerSecond = 0
        // Likewise the change rate, and reaction events go out one per reaction (LifecycleLimitTests
        // turn the rate and the storm window on).
        chat.limits.userChangesPerSecond = 0
        chat.limits.reactionEventWindowMs = 0
        // So is the per-connection request budget (RequestBudgetTests turn it on), and the cap on
        // requests in flight is out of reach: a test firing 100 requests on a loaded machine
        // would otherwise see some refused (ResourceBoundsTests.requestsInFlight sets its own).
        chat.limits.connectionRequestsPerSecond = 0
        chat.limits.maxRequestsInFlight = 100_000
        configure(&settings, &chat)
        let clock = ManualClock(Milliseconds(Date().timeIntervalSince1970 * 1000))
        let server = try await GatewayServer.make(settings: settings, configuration: chat, logger: logger, clock: clock)
        return try TestGateway(server: server, tls: tls, dataDirectory: chat.storage.dataDirectory, clock: clock, chat: chat)
    }

    private init(server: GatewayServer, tls: Bool, dataDirectory: String, clock: ManualClock, chat: GatewayConfiguration) throws {
        self.server = server
        self.tls = tls
        port = try server.start()
        self.dataDirectory = dataDirectory
        self.clock = clock
        self.chat = chat
    }

    /// The gateways' log for the whole suite: JSON lines appended to the file named by
    /// `CHAT_GATEWAY_TEST_LOG` (scripts/test sets it and then checks that no line holds
    /// a token, a secret or a message text); nothing when it is unset.
    static let suiteLogger: Logger = {
        guard let path = ProcessInfo.processInfo.environment["CHAT_GATEWAY_TEST_LOG"], !path.isEmpty else {
            return Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }) }
        let sink = FileDescriptorLogSink(fileDescriptor: fd)
        return Logger(label: "chat-gateway") { label in JSONLogHandler(label: label, level: .debug, sink: sink.write) }
    }()

    static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("chat-gateway-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A client token for `user`, signed with this gateway's secret and clock.
    /// A `ttlSeconds` of 0 or less gives a token that expired that long ago.
    func token(for user: String, ttlSeconds: Int64 = 3600, name: String? = nil) async throws -> String {
        if ttlSeconds <= 0 {
            let exp = clock.now() / 1000 + ttlSeconds
            return TokenHardeningTests.sign(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: #"{"sub":"\#(user)","exp":\#(exp)}"#,
                                            secret: chat.auth.jwtSecret)
        }
        let authority = await TokenAuthority(secret: chat.auth.jwtSecret, clock: clock)
        return try await authority.issue(userID: user, ttlSeconds: ttlSeconds, name: name).token
    }

    /// A connected chat client for `user`.
    /// The upgrade runs on its own thread: the gateway verifies tokens in a Task, which
    /// needs a free thread of the (small) cooperative pool this test may be holding.
    func connect(_ user: String, query: String = "", receiveBufferBytes: Int32? = nil,
                 timeoutSeconds: Int = 5, deflate: Bool = false) async throws -> RawChatClient {
        let token = try await token(for: user)
        let (port, tls) = (self.port, self.tls)
        return try await offThePool {
            try RawChatClient(port: port, tls: tls, path: "/v1/ws?token=\(token)\(query)", timeoutSeconds: timeoutSeconds,
                           receiveBufferBytes: receiveBufferBytes, deflate: deflate)
        }
    }

    init(tls: Bool = false, rsa: Bool = false, configure: (inout TransportSettings) -> Void = { _ in }) throws {
        self.tls = tls
        var settings = TransportSettings()
        settings.port = 0
        settings.eventLoops = 2
        settings.echoEnabled = true
        if tls {
            let pair = try rsa ? DevelopmentCertificate.rsa.get() : DevelopmentCertificate.ecdsa.get()
            settings.certificateFile = pair.certificate
            settings.privateKeyFile = pair.key
        }
        configure(&settings)
        server = try GatewayServer(settings: settings, logger: TestGateway.suiteLogger)
        port = try server.start()
    }

    deinit { server.stop() }
}

/// Self-signed pairs made once per test run with scripts/gen-dev-cert.
enum DevelopmentCertificate {
    typealias Pair = (certificate: String, key: String)
    static let ecdsa = make(keyType: "ec")
    static let rsa = make(keyType: "rsa")

    private static func make(keyType: String) -> Result<Pair, TestClientError> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chat-gateway-tests-\(getpid())-\(keyType)").path
        let status: Int32
        do {
            status = try ChildProcess.run(root.appendingPathComponent("scripts/gen-dev-cert").path, [dir],
                                          environment: ProcessInfo.processInfo.environment.merging(["KEY_TYPE": keyType]) { $1 }).status
        } catch {
            return .failure(TestClientError("gen-dev-cert: \(error)"))
        }
        guard status == 0 else { return .failure(TestClientError("gen-dev-cert failed")) }
        return .success((dir + "/dev-cert.pem", dir + "/dev-key.pem"))
    }
}
