import Foundation
import Synchronization
import Testing
@testable import ChatClient

/// PROTOCOL.md §1 (v1.2) from the Swift SDK's side: the token goes in the first message,
/// never in the URL, and the gateway's close codes for a refused `auth` become the errors a
/// refused upgrade gives, with the same retry rules.
@Suite("ChatClient auth after the upgrade", .serialized)
struct ChatClientAuthTests {
    @Test func theTokenNeverGoesInTheURLAndIsTheFirstMessage() async throws {
        let gateway = try await LiveGateway.start()
        let token = try await gateway.token(for: "alice")
        let transport = RecordingTransport()
        var options = ChatClient.Options()
        options.device = "phone"
        options.hideBlocked = true
        let client = ChatClient(url: gateway.url, transport: transport, options: options) { token }
        try await client.connect()
        #expect(try await client.me().user.id == "alice")
        let urls = transport.urls
        #expect(urls == [gateway.url + "?auth=message&device=phone&hideBlocked=1"])
        #expect(!urls.contains { $0.contains(token) || $0.contains("token") })
        let first = try #require(transport.sent.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "auth")
        #expect(object["token"] as? String == token)
        await client.disconnect()
    }

    @Test func aMistypedEndpointErrorShowsNoCredential() async throws {
        for url in ["htps://chat.example.com/v1/ws?token=eyJhbGciOi.secret-claims.signature",
                    "wss://chat.example.com:99999/v1/ws?token=eyJhbGciOi.secret-claims.signature",
                    "ws://user:secret-claims@/v1/ws#token=secret-claims"] {
            do {
                _ = try await WebSocketTransport().connect(to: url)
                Issue.record("\(url) was accepted")
            } catch let error as ChatClientError {
                #expect(error.code == .connectionFailed)
                #expect(!"\(error)".contains("secret-claims"), "\(error)")
                #expect(!error.message.contains("secret-claims"))
            }
        }
    }

    @Test func aRefusedTokenIsAskedForOnceMoreThenFailsWith4004() async throws {
        let gateway = try await LiveGateway.start()
        let calls = Counter()
        let client = ChatClient(url: gateway.url) { _ = calls.increment(); return "not-a-token" }
        do {
            try await client.connect()
            Issue.record("a forged token connected")
        } catch let error as ChatClientError {
            #expect(error.code == .notLoggedIn)
            #expect(error.closeCode == 4004)
            #expect(error.message.hasPrefix("ERR_NOT_LOGGED_IN"))
        }
        #expect(calls.value == 2)
        #expect(await client.connectionState == .closed)
    }

    @Test func anExpiredTokenFailsWith4001() async throws {
        let gateway = try await LiveGateway.start()
        let token = try await gateway.token(for: "bob", ttlSeconds: 10)
        gateway.clock.advance(by: 11_000)
        let client = ChatClient(url: gateway.url) { token }
        await #expect { try await client.connect() } throws: { error in
            (error as? ChatClientError)?.code == .tokenExpired && (error as? ChatClientError)?.closeCode == 4001
        }
    }

    @Test func aDeactivatedUserOrOneOverItsCapIsRefusedAsTheUpgradeWould() async throws {
        let gateway = try await LiveGateway.start(maxConnectionsPerUser: 1)
        let first = gateway.client("carol")
        try await first.connect()
        let second = gateway.client("carol")
        await #expect { try await second.connect() } throws: { error in
            let error = error as? ChatClientError
            return error?.code == .handshakeRefused && error?.status == 429 && error?.closeCode == 4005
        }
        await first.disconnect()
        _ = try await gateway.admin("POST", "/v1/admin/users", ["id": "dave"])
        #expect(try await gateway.admin("POST", "/v1/admin/users/dave/deactivate").0 == 200)
        let calls = Counter()
        let dave = ChatClient(url: gateway.url) { _ = calls.increment(); return try await gateway.token(for: "dave") }
        await #expect { try await dave.connect() } throws: { error in
            let error = error as? ChatClientError
            return error?.code == .handshakeRefused && error?.status == 403 && error?.closeCode == 4002
        }
        #expect(calls.value == 1)
    }

    @Test func aRefusedTokenStopsReconnecting() async throws {
        let gateway = try await LiveGateway.start()
        let valid = Atomic<Bool>(true)
        let transport = CuttableTransport()
        let refusing = ChatClient(url: gateway.url, transport: transport, options: {
            var options = ChatClient.Options()
            options.backoff = ReconnectBackoff(base: .milliseconds(20), maximum: .milliseconds(200))
            return options
        }()) {
            valid.load(ordering: .relaxed) ? try await gateway.token(for: "erin") : "not-a-token"
        }
        try await refusing.connect()
        let events = await refusing.events()
        valid.store(false, ordering: .relaxed)
        // At exp the gateway closes 4001: the client asks for a fresh token, which is refused.
        gateway.closeConnections(of: "erin", code: 4001)
        let closed = Task {
            for await event in events where event == .connection(.closed) { return true }
            return false
        }
        let deadline = Task { try await Task.sleep(for: .seconds(10)); closed.cancel() }
        #expect(await closed.value, "the client gave up")
        deadline.cancel()
        let connects = transport.connectCount
        try await Task.sleep(for: .milliseconds(600))
        #expect(transport.connectCount == connects, "no reconnect after the refusal")
        #expect(await refusing.connectionState == .closed)
    }
}

/// `WebSocketTransport`, recording the URLs it is asked to open and what is sent on them.
final class RecordingTransport: ChatTransport, @unchecked Sendable {
    private let inner = WebSocketTransport()
    private let lock = NSLock()
    private var recordedURLs: [String] = []
    private var recordedSends: [String] = []

    var urls: [String] { lock.withLock { recordedURLs } }
    var sent: [String] { lock.withLock { recordedSends } }

    func connect(to url: String) async throws -> any ChatTransportConnection {
        lock.withLock { recordedURLs.append(url) }
        return RecordingConnection(inner: try await inner.connect(to: url), transport: self)
    }

    fileprivate func record(_ text: String) { lock.withLock { recordedSends.append(text) } }
}

private final class RecordingConnection: ChatTransportConnection, @unchecked Sendable {
    let inner: any ChatTransportConnection
    let transport: RecordingTransport

    init(inner: any ChatTransportConnection, transport: RecordingTransport) {
        self.inner = inner
        self.transport = transport
    }

    var events: AsyncStream<TransportEvent> { inner.events }

    func send(_ text: String) {
        transport.record(text)
        inner.send(text)
    }

    func close() { inner.close() }
}
