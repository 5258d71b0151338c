import Foundation
import Testing
@testable import ChatClient

/// The SDK's keepalive against a live gateway, with short intervals: a connection that stops
/// delivering is found dead by its unanswered ping and replaced through the ordinary
/// reconnect; a quiet one whose pings are answered stays. The pong timeouts leave room for a
/// gateway that suites running beside these ones slow down.
@Suite("ChatClient keepalive", .serialized)
struct ChatClientKeepaliveTests {
    /// Polls `condition` every 20 ms until it holds or `seconds` pass.
    private static func eventually(seconds: Double = 30, _ condition: () async -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test func aConnectionThatStopsDeliveringIsDroppedAfterItsPingAndReplaced() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport(keepalive: .init(idle: .milliseconds(200), pongTimeout: .seconds(1)))
        let alice = gateway.client("alice", transport: transport)
        try await alice.connect()
        let channel = try await alice.createChannel(userIDs: [], name: "keepalive")
        transport.stall()
        #expect(try await Self.eventually { transport.connectCount >= 2 }, "a new connection after the ping timeout")
        let sent = try await alice.send("after the stall", to: channel.id)
        #expect(sent.text == "after the stall")
        #expect(await alice.connectionState == .connected)
        await alice.disconnect()
    }

    @Test func aQuietConnectionWhosePingsAreAnsweredStays() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport(keepalive: .init(idle: .milliseconds(100), pongTimeout: .seconds(2)))
        let alice = gateway.client("alice", transport: transport)
        try await alice.connect()
        // Pings every idle period without a byte from the app, each answered.
        try await Task.sleep(for: .seconds(1))
        #expect(transport.connectCount == 1)
        #expect(await alice.connectionState == .connected)
        _ = try await alice.me()
        #expect(transport.connectCount == 1)
        await alice.disconnect()
    }
}
