import Foundation
import Testing
@testable import ChatClient

/// The token provider is asked again when the gateway warns the token expires (and then
/// closes with 4001); `ERR_RATE_LIMITED` is waited out when the app asks for it.
@Suite("ChatClient tokens and rate", .serialized)
struct ChatClientTokenAndRateTests {
    @Test func anExpiringTokenIsReplacedAndTheClientComesBack() async throws {
        let gateway = try await LiveGateway.start()
        let calls = Counter()
        let client = ChatClient(url: gateway.url) {
            _ = calls.increment()
            return try await gateway.token(for: "dora", ttlSeconds: 120)
        }
        try await client.connect()
        let events = await client.events()
        gateway.clock.advance(by: 70_000)  // within 60 s of exp: session.expiring on the next tick
        var expiring = false
        var back = false
        let watch = Task {
            for await event in events {
                if case .sessionExpiring = event { expiring = true; gateway.clock.advance(by: 60_000) }  // past exp: 4001
                if case .connection(.reconnecting) = event { continue }
                if expiring, case .connection(.connected) = event { back = true; break }
            }
            return (expiring, back)
        }
        let deadline = Task { try await Task.sleep(for: .seconds(15)); watch.cancel() }
        let (sawExpiring, cameBack) = await watch.value
        deadline.cancel()
        #expect(sawExpiring)
        #expect(cameBack)
        #expect(calls.value == 2, "the provider was asked for a new token")
        #expect(try await client.me().user.id == "dora")
        await client.disconnect()
    }

    @Test func rateLimitedSendsAreRefusedOrWaitedOutAsTheAppAsks() async throws {
        let gateway = try await LiveGateway.start(userMessagesPerSecond: 1)
        let ticking = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(50))
                gateway.clock.advance(by: 100)
            }
        }
        defer { ticking.cancel() }
        let plain = gateway.client("erin")
        try await plain.connect()
        let channel = try await plain.createChannel(userIDs: [], name: "rate")
        _ = try await plain.send("one", to: channel.id)
        do {
            _ = try await plain.send("two", to: channel.id)
            Issue.record("the second send within a second was not refused")
        } catch let error as ChatClientError {
            #expect(error.code == .rateLimited)
            #expect((error.retryAfterMs ?? 0) > 0)
        }
        let patient = gateway.client("erin") { $0.retryRateLimited = true }
        try await patient.connect()
        var seqs: [Int64] = []
        for text in ["three", "four", "five"] { seqs.append(try await patient.send(text, to: channel.id).seq) }
        #expect(seqs == [2, 3, 4], "each waited out its refusal and was stored once")
        await plain.disconnect()
        await patient.disconnect()
    }
}
