import Foundation
import Testing
@testable import ChatClient

/// The SDK against a live gateway while its connection is cut (a server-side close and a
/// killed socket): the app's message stream has every message once and in order, and a send
/// in flight across a cut resolves once with one stored message.
@Suite("ChatClient reconnects", .serialized)
struct ChatClientReconnectTests {
    /// Collects `count` new messages from `stream`, or fails after `seconds`.
    private static func collect(_ stream: AsyncStream<MessageFeedItem>, count: Int, seconds: Int = 30) async throws -> [Message] {
        try await withThrowingTaskGroup(of: [Message]?.self) { group in
            group.addTask {
                var messages: [Message] = []
                for await item in stream {
                    guard case .new(let message) = item else { continue }
                    messages.append(message)
                    if messages.count == count { break }
                }
                return messages
            }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let messages = first else {
                throw ChatClientError(.timedOut, "stream did not yield \(count) messages in \(seconds) s")
            }
            return messages
        }
    }

    @Test func everyMessageOnceAndInOrderAcrossAServerCloseAndAKilledSocket() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport()
        let alice = gateway.client("alice", transport: transport)
        let bob = gateway.client("bob")
        try await alice.connect()
        try await bob.connect()
        let channel = try await alice.createChannel(userIDs: ["bob"], name: "stream")
        #expect(channel.memberCount == 2 && Set(channel.members) == ["alice", "bob"])
        let stream = try await alice.messages(in: channel.id, afterSeq: 0)
        let total = 300
        let sender = Task {
            for n in 1...total {
                _ = try await bob.send("m\(n)", to: channel.id)
                if n == 80 { gateway.closeConnections(of: "alice") }
                if n == 180 { transport.kill() }
                if n % 20 == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
        }
        let received = try await Self.collect(stream, count: total)
        try await sender.value
        #expect(received.map(\.seq) == Array(1...Int64(total)))
        #expect(received.map(\.text) == (1...total).map { "m\($0)" })
        #expect(transport.connectCount >= 3, "a first connect and one per cut")
        // Nothing more arrives: no duplicate was held back.
        let more = try? await Self.collect(stream, count: 1, seconds: 1)
        #expect(more == nil)
        await alice.disconnect()
        await bob.disconnect()
    }

    @Test func aSendInFlightAcrossACutResolvesOnceWithOneStoredMessage() async throws {
        let gateway = try await LiveGateway.start()
        let transport = CuttableTransport()
        let alice = gateway.client("alice", transport: transport)
        try await alice.connect()
        let channel = try await alice.createChannel(userIDs: [], name: "sends")
        var sent: [Message] = []
        for round in 0..<20 {
            // From before the gateway has the request to after it answered.
            transport.cutAfterNextSend(after: .milliseconds(round % 5 * 2))
            sent.append(try await alice.send("s\(round)", to: channel.id, clientMessageID: "cm-\(round)"))
        }
        #expect(sent.map(\.text) == (0..<20).map { "s\($0)" })
        #expect(sent.map(\.clientMessageId) == (0..<20).map { "cm-\($0)" })
        let stored = try await alice.history(channel.id, afterSeq: 0, limit: 100).items
        #expect(stored.map(\.clientMessageId) == (0..<20).map { "cm-\($0)" }, "each stored once, in order")
        #expect(stored.map(\.seq) == sent.map(\.seq))
        #expect(transport.connectCount > 5, "the cuts happened")
        await alice.disconnect()
    }

    @Test func aRefusedTokenIsAskedForAgainAndAnUnreachableGatewayThrows() async throws {
        let gateway = try await LiveGateway.start()
        let calls = Counter()
        let client = ChatClient(url: gateway.url) {
            calls.increment() == 1 ? "not-a-token" : try await gateway.token(for: "carol")
        }
        try await client.connect()
        #expect(calls.value == 2)
        #expect(try await client.me().user.id == "carol")
        await client.disconnect()
        let nowhere = ChatClient(url: "ws://127.0.0.1:1/v1/ws") { "t" }
        await #expect(throws: ChatClientError.self) { try await nowhere.connect() }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() -> Int { lock.withLock { count += 1; return count } }
    var value: Int { lock.withLock { count } }
}
