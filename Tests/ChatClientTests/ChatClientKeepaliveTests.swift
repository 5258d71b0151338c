import Foundation
import Testing
@testable import ChatClient

/// The SDK's keepalive against a live gateway, with intervals of milliseconds: a connection
/// that stops delivering is found dead by its unanswered ping and replaced through the
/// ordinary reconnect; a quiet one whose pings are answered stays.
@Suite("ChatClient keepalive", .serialized)
struct ChatClientKeepaliveTests {
    private static let quick = WebSocketTransport.Keepalive(idle: .milliseconds(100), pongTimeout: .milliseconds(200))

    /// Polls `condition` every 20 ms until it holds or `seconds` pass.
    private static func eventually(seconds: Double = 10, _ condition: () async -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test func aConnectionThatStopsDeliveringIsDroppedAfterItsPingAndReplaced() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport(keepalive: Self.quick)
        let alice = gateway.client("alice", transport: transport)
        try await alice.connect()
        let channel = try await alice.createChannel(userIDs: [], name: "keepalive")
        transport.stall()
        #expect(try await Self.eventually { transport.connectCount == 2 }, "a new connection after the ping timeout")
        let sent = try await alice.send("after the stall", to: channel.id)
        #expect(sent.text == "after the stall")
        #expect(await alice.connectionState == .connected)
        await alice.disconnect()
    }

    @Test func aQuietConnectionWhosePingsAreAnsweredStays() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport(keepalive: Self.quick)
        let alice = gateway.client("alice", transport: transport)
        try await alice.connect()
        // Several idle periods and pong timeouts without a byte from the app.
        try await Task.sleep(for: .seconds(1))
        #expect(transport.connectCount == 1)
        #expect(await alice.connectionState == .connected)
        _ = try await alice.me()
        #expect(transport.connectCount == 1)
        await alice.disconnect()
    }
}
