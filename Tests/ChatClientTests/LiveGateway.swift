import ChatCore
import EventLoop
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import WebSocket
import ServiceTestSupport
@testable import ChatClient
@testable import Gateway

/// A real gateway on 127.0.0.1 port 0 (SQLite in a fresh folder) for the SDK's tests, with
/// the admin API, tokens, and a way to cut a user's connections from the server side.
final class LiveGateway: Sendable {
    let server: GatewayServer
    let port: Int
    let clock: ManualClock
    private let secret: String

    /// `userChangesPerSecond`: edits, deletes and reactions per user (§15); 0 turns the rate off.
    static func start(revealBlockedBy: Bool = false, userMessagesPerSecond: Int = 0, maxConnectionsPerUser: Int = 30,
                      userChangesPerSecond: Int = 0, userChangeBurst: Int = 1, typingListAboveMembers: Int = 100,
                      certificate: (certificate: String, key: String)? = nil) async throws -> LiveGateway
    {
        var settings = TransportSettings()
        settings.port = 0
        settings.eventLoops = 2
        // The SDK sends its auth message from its actor, which needs a thread of the test
        // process's cooperative pool; suites running beside these ones hold that pool for
        // seconds at a time, longer than the 10 s a real client gets.
        settings.timeouts.handshake = 60
        if let certificate {
            settings.certificateFile = certificate.certificate
            settings.privateKeyFile = certificate.key
        }
        var chat = GatewayConfiguration()
        chat.storage.dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("chat-client-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: chat.storage.dataDirectory, withIntermediateDirectories: true)
        chat.limits.userMessagesPerSecond = userMessagesPerSecond
        chat.limits.userMessageBurst = 1
        chat.limits.userChangesPerSecond = userChangesPerSecond
        chat.limits.userChangeBurst = userChangeBurst
        chat.limits.typingListAboveMembers = typingListAboveMembers
        chat.limits.connectionRequestsPerSecond = 0
        chat.limits.maxRequestsInFlight = 100_000
        chat.blocking.revealBlockedBy = revealBlockedBy
        chat.limits.maxConnectionsPerUser = maxConnectionsPerUser
        let clock = ManualClock(Milliseconds(Date().timeIntervalSince1970 * 1000))
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let server = try await GatewayServer.make(settings: settings, configuration: chat, logger: logger, clock: clock)
        return try LiveGateway(server: server, clock: clock, secret: chat.auth.jwtSecret)
    }

    private init(server: GatewayServer, clock: ManualClock, secret: String) throws {
        self.server = server
        self.clock = clock
        self.secret = secret
        port = try server.start()
    }

    deinit { server.stop() }

    var url: String { "ws://127.0.0.1:\(port)/v1/ws" }

    /// A self-signed certificate for localhost and 127.0.0.1 (scripts/gen-dev-cert).
    static func developmentCertificate() throws -> (certificate: String, key: String) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chat-client-cert-\(UUID().uuidString)").path
        let status = try ChildProcess.run(root.appendingPathComponent("scripts/gen-dev-cert").path, [directory]).status
        guard status == 0 else { throw ChatClientError(.other("TEST"), "gen-dev-cert failed") }
        return (directory + "/dev-cert.pem", directory + "/dev-key.pem")
    }

    func token(for user: String, ttlSeconds: Int64 = 3600) async throws -> String {
        try await TokenAuthority(secret: secret, clock: clock).issue(userID: user, ttlSeconds: ttlSeconds, name: nil).token
    }

    /// An SDK client for `user`, quick to reconnect, on `transport`.
    func client(_ user: String, transport: any ChatTransport = WebSocketTransport(),
                configure: (inout ChatClient.Options) -> Void = { _ in }) -> ChatClient {
        var options = ChatClient.Options()
        configure(&options)
        options.backoff = ReconnectBackoff(base: .milliseconds(20), maximum: .milliseconds(200))
        options.requestTimeout = .seconds(20)
        return ChatClient(url: url, transport: transport, options: options) { [self] in try await token(for: user) }
    }

    /// Closes every connection of `user` from the server side (1001, or `code`).
    func closeConnections(of user: String, code: UInt16 = 1001) {
        guard let chat = server.router.chat else { return }
        chat.inbox.async { chat.closeSessions(of: user, code: CloseCode(code), reason: "test") }
    }

    /// One admin API call; the status and the JSON body.
    @discardableResult
    func admin(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.setValue("Bearer \(GatewayConfiguration.Admin.developmentKey)", forHTTPHeaderField: "Authorization")
        if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, object)
    }
}

/// Wraps a transport so a test can cut the connection in use: a killed socket, or right after
/// the next `message.send` went out; or stall it, as a network that stops delivering.
final class CuttableTransport: ChatTransport, @unchecked Sendable {
    private let inner: WebSocketTransport
    private let lock = NSLock()
    private var current: WebSocketTransportConnection?
    private var cutAfterNextSend: Duration?
    private(set) var connects = 0

    init(keepalive: WebSocketTransport.Keepalive? = WebSocketTransport.Keepalive()) {
        inner = WebSocketTransport(keepalive: keepalive)
    }

    func connect(to url: String) async throws -> any ChatTransportConnection {
        let connection = try await inner.connect(to: url)
        lock.withLock {
            current = connection as? WebSocketTransportConnection
            connects += 1
        }
        return CuttableConnection(inner: connection, transport: self)
    }

    var connectCount: Int { lock.withLock { connects } }

    /// Drops the TCP connection now, without a close frame.
    func kill() { lock.withLock { current }?.dropForTesting() }

    /// Stops reading the connection in use: nothing it receives arrives any more.
    func stall() { lock.withLock { current }?.stallForTesting() }

    /// The next `message.send` is followed, `after` later, by a killed socket.
    func cutAfterNextSend(after delay: Duration) { lock.withLock { cutAfterNextSend = delay } }

    fileprivate func sent(_ text: String) {
        guard text.contains("\"message.send\"") else { return }
        let delay: Duration? = lock.withLock {
            defer { cutAfterNextSend = nil }
            return cutAfterNextSend
        }
        guard let delay else { return }
        Task {
            try? await Task.sleep(for: delay)
            self.kill()
        }
    }
}

private final class CuttableConnection: ChatTransportConnection, @unchecked Sendable {
    let inner: any ChatTransportConnection
    /// Weak: a client's reconnect loop may still send on its last connection after the test
    /// that made the transport ended and released it.
    weak var transport: CuttableTransport?

    init(inner: any ChatTransportConnection, transport: CuttableTransport) {
        self.inner = inner
        self.transport = transport
    }

    var events: AsyncStream<TransportEvent> { inner.events }

    func send(_ text: String) {
        inner.send(text)
        transport?.sent(text)
    }

    func close() { inner.close() }
}
