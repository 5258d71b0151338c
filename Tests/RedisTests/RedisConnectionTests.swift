import Dispatch
import EventLoop
import ServiceTestSupport
import Synchronization
import Testing
@testable import Redis

/// `RedisConnection` on one of our event loops against a real redis-server.
@Suite(.enabled(if: RedisTestServer.isAvailable, "redis-server is not installed"), .serialized)
struct RedisConnectionTests {
    let loop = EventLoop(index: 0)

    /// Runs `body` on the loop and waits (up to 5 s) until it calls `done` with a value.
    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (_ done: @escaping @Sendable (T) -> Void) -> Void)
        async throws -> T
    {
        let box = Mutex<T?>(nil)
        let finished = DispatchSemaphore(value: 0)
        loop.execute {
            body { value in
                box.withLock { $0 = value }
                finished.signal()
            }
        }
        guard finished.wait(timeout: .now() + 5) == .success, let value = box.withLock({ $0 }) else {
            throw TestTimeout()
        }
        return value
    }

    struct TestTimeout: Error {}

    /// A connected connection (on the loop) to `port`.
    private func connect(_ port: Int) async throws -> RedisConnection {
        let result: ConnectResult = try await onLoop { done in
            var connection: RedisConnection?
            connection = RedisConnection(host: "127.0.0.1", port: port, loop: loop, connected: { failure in
                done(ConnectResult(connection: failure == nil ? connection : nil, failure: failure))
            }, closed: { _ in })
        }
        guard let connection = result.connection else { throw ConnectFailed(reason: result.failure ?? "?") }
        return connection
    }

    struct ConnectResult: @unchecked Sendable {
        var connection: RedisConnection?
        var failure: String?
    }

    struct ConnectFailed: Error { var reason: String }

    @Test func commandsGetTheirRepliesInOrder() async throws {
        let server = try RedisTestServer()
        let connection = try await connect(server.port)
        let replies: [RedisReply] = try await onLoop { done in
            var replies: [RedisReply] = []
            let collect: (RedisReply) -> Void = { reply in
                replies.append(reply)
                if replies.count == 4 { done(replies) }
            }
            connection.send(["SET", "k", "v\u{0}binary"], reply: collect)
            connection.send(["GET", "k"], reply: collect)
            connection.send(["INCRBY", "n", "41"], reply: collect)
            connection.send(["NOSUCHCOMMAND"], reply: collect)
        }
        #expect(replies[0] == .status("OK"))
        #expect(replies[1] == .string(Array("v\u{0}binary".utf8)))
        #expect(replies[2] == .integer(41))
        guard case .error = replies[3] else { Issue.record("no error for an unknown command"); return }
        loop.execute { connection.close() }
    }

    @Test func aSubscriberGetsEveryMessageInPublishOrder() async throws {
        let server = try RedisTestServer()
        let subscriber = try await connect(server.port)
        let publisher = try await connect(server.port)
        let count = 2_000
        let received: [String] = try await onLoop { done in
            var received: [String] = []
            subscriber.subscribe(["bus"]) { reply in
                guard case .array(let parts) = reply, parts.count == 3 else { return }
                if parts[0].text == "subscribe" {
                    for n in 0..<count { publisher.send(["PUBLISH", "bus", "m\(n)"]) { _ in } }
                } else if parts[0].text == "message", let text = parts[2].text {
                    received.append(text)
                    if received.count == count { done(received) }
                }
            }
        }
        #expect(received == (0..<count).map { "m\($0)" })
    }

    @Test func channelsAreAddedToAndTakenFromALiveSubscription() async throws {
        let server = try RedisTestServer()
        let subscriber = try await connect(server.port)
        let publisher = try await connect(server.port)
        let received: [String] = try await onLoop { done in
            var received: [String] = []
            var step = 0
            subscriber.subscribe(["a"]) { reply in
                guard case .array(let parts) = reply, parts.count == 3 else { return }
                switch parts[0].text {
                case "subscribe" where parts[1].text == "a":
                    subscriber.subscribe(more: ["b", "c"])
                case "subscribe" where parts[1].text == "c":
                    for channel in ["a", "b", "c"] { publisher.send(["PUBLISH", channel, "\(channel)1"]) { _ in } }
                case "message":
                    received.append(parts[2].text ?? "")
                    if received.count == 3 && step == 0 {
                        step = 1
                        subscriber.unsubscribe(["b"])
                    }
                case "unsubscribe":
                    // Only c and a hear this round; b no longer does.
                    for channel in ["a", "b", "c"] { publisher.send(["PUBLISH", channel, "\(channel)2"]) { _ in } }
                    publisher.send(["PUBLISH", "a", "end"]) { _ in }
                default:
                    break
                }
                if received.last == "end" { done(received) }
            }
        }
        #expect(received == ["a1", "b1", "c1", "a2", "c2", "end"])
    }

    @Test func aKilledServerClosesTheConnectionAndFailsWhatWasAsked() async throws {
        let server = try RedisTestServer()
        let seen = Seen()
        let port = server.port
        let result: ConnectResult = try await onLoop { done in
            var connection: RedisConnection?
            connection = RedisConnection(host: "127.0.0.1", port: port, loop: loop, connected: { failure in
                connection?.send(["BLPOP", "never", "0"]) { reply in seen.add("reply \(reply)") }
                done(ConnectResult(connection: connection, failure: failure))
            }, closed: { reason in seen.add(reason == nil ? "closed on request" : "closed: lost") })
        }
        #expect(result.failure == nil)
        server.kill()
        for _ in 0..<200 where seen.all.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(seen.all == ["reply disconnected", "closed: lost"])
        let connected: Bool = try await onLoop { done in done(result.connection?.isConnected ?? true) }
        #expect(!connected)
    }

    /// A subscription to several channels hears `.disconnected` once when the server dies.
    @Test func aSubscriptionToSeveralChannelsEndsOnceWhenTheServerDies() async throws {
        let server = try RedisTestServer()
        let seen = Seen()
        let port = server.port
        let result: ConnectResult = try await onLoop { done in
            var connection: RedisConnection?
            connection = RedisConnection(host: "127.0.0.1", port: port, loop: loop, connected: { failure in
                connection?.subscribe(["one", "two", "three"]) { reply in
                    if case .array(let parts) = reply { seen.add("\(parts[0].text ?? "?") \(parts[1].text ?? "?")") }
                    if reply == .disconnected { seen.add("disconnected") }
                }
                done(ConnectResult(connection: connection, failure: failure))
            }, closed: { _ in seen.add("closed") })
        }
        #expect(result.failure == nil)
        for _ in 0..<200 where seen.all.count < 3 { try await Task.sleep(for: .milliseconds(10)) }
        server.kill()
        for _ in 0..<200 where !seen.all.contains("closed") { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.all == ["subscribe one", "subscribe two", "subscribe three", "disconnected", "closed"])
    }

    final class Seen: Sendable {
        private let values = Mutex<[String]>([])
        func add(_ value: String) { values.withLock { $0.append(value) } }
        var all: [String] { values.withLock { $0 } }
    }

    @Test func connectingToNothingFailsAtOnce() async throws {
        let port = LoopbackPort.free()
        let failure: String? = try await onLoop { done in
            _ = RedisConnection(host: "127.0.0.1", port: port, loop: loop, connected: { failure in done(failure) },
                                closed: { _ in })
        }
        #expect(failure != nil)
    }
}
