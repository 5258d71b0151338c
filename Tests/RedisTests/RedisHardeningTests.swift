import Dispatch
import EventLoop
import Foundation
import ServiceTestSupport
import Synchronization
import Testing
@testable import Redis

/// Redis is not trusted blindly (issue 26): AUTH and SELECT from the URL, TLS with the
/// server verified, and a deadline on every command, against real redis-servers.
@Suite(.enabled(if: RedisTestServer.isAvailable, "redis-server is not installed"), .serialized)
struct RedisHardeningTests {
    let loop = EventLoop(index: 0)

    struct Outcome: @unchecked Sendable {
        var connection: RedisConnection?
        var failure: String?
    }

    struct TestTimeout: Error {}

    private func onLoop<T: Sendable>(seconds: Int = 5,
                                     _ body: @escaping @Sendable (_ done: @escaping @Sendable (T) -> Void) -> Void) throws -> T {
        let box = Mutex<T?>(nil)
        let finished = DispatchSemaphore(value: 0)
        loop.execute {
            body { value in
                box.withLock { if $0 == nil { $0 = value } }
                finished.signal()
            }
        }
        guard finished.wait(timeout: .now() + .seconds(seconds)) == .success, let value = box.withLock({ $0 }) else {
            throw TestTimeout()
        }
        return value
    }

    /// Connects as `settings` say: the ready connection, or why it is not.
    private func connect(_ settings: RedisConnectionSettings, closed: @escaping @Sendable (String?) -> Void = { _ in })
        throws -> Outcome
    {
        try onLoop { done in
            var connection: RedisConnection?
            connection = RedisConnection(settings: settings, loop: loop, connected: { failure in
                done(Outcome(connection: failure == nil ? connection : nil, failure: failure))
            }, closed: closed)
        }
    }

    private func command(_ connection: RedisConnection, _ arguments: [String]) throws -> RedisReply {
        try onLoop { done in connection.send(arguments) { done($0) } }
    }

    @Test func aPasswordAndADatabaseFromTheURLAreUsed() async throws {
        try await offThePool {
            let password = "pw-Secret-41"
            let server = try RedisTestServer(arguments: ["--requirepass", password,
                                                         "--user", "chat", "on", ">user-Secret-7", "~*", "&*", "+@all"])
            let url = "redis://:\(password)@127.0.0.1:\(server.port)/3"
            let inDatabase3 = try connect(RedisConnectionSettings(endpoint: try RedisEndpoint.parse(url)))
            let connection = try #require(inDatabase3.connection, "\(inDatabase3.failure ?? "")")
            #expect(try command(connection, ["SET", "where", "three"]) == .status("OK"))
            let asUser = try connect(RedisConnectionSettings(endpoint: try RedisEndpoint.parse(
                "redis://chat:user-Secret-7@127.0.0.1:\(server.port)")))
            let database0 = try #require(asUser.connection, "\(asUser.failure ?? "")")
            #expect(try command(database0, ["GET", "where"]) == .null)
            #expect(try command(database0, ["SELECT", "3"]) == .status("OK"))
            #expect(try command(database0, ["GET", "where"]) == .string(Array("three".utf8)))

            for (url, secret) in [("redis://:wrong-\(password)@127.0.0.1:\(server.port)", "wrong-\(password)"),
                                  ("redis://chat:not-user-Secret@127.0.0.1:\(server.port)", "not-user-Secret"),
                                  ("redis://127.0.0.1:\(server.port)", password)] {
                let refused = try connect(RedisConnectionSettings(endpoint: try RedisEndpoint.parse(url)))
                let reason = try #require(refused.failure)
                #expect(refused.connection == nil)
                #expect(reason.contains("AUTH refused") || reason.contains("NOAUTH"), "\(reason)")
                #expect(!reason.contains(secret))
            }
        }
    }

    @Test func rediss_verifiesTheServersChainAndAddress() async throws {
        try await offThePool {
            let authority = try TestCertificateAuthority(name: "redis")
            let good = try authority.serverCertificate(named: "redis", subjectAltName: "IP:127.0.0.1")
            let server = try RedisTestServer(arguments: ["--tls-cert-file", good.certificate, "--tls-key-file", good.key,
                                                         "--tls-ca-cert-file", authority.certificate,
                                                         "--tls-auth-clients", "no"], tlsOnly: true)
            let endpoint = try RedisEndpoint.parse("rediss://127.0.0.1:\(server.port)")
            let trusted = try connect(RedisConnectionSettings(
                endpoint: endpoint, tls: try TLSContext.verifyingClient(caFile: authority.certificate)))
            let connection = try #require(trusted.connection, "\(trusted.failure ?? "")")
            #expect(try command(connection, ["SET", "k", "over TLS"]) == .status("OK"))
            #expect(try command(connection, ["GET", "k"]) == .string(Array("over TLS".utf8)))

            // A chain to another CA, and the right CA's certificate for another address: both refused.
            let stranger = try TestCertificateAuthority(name: "stranger")
            let untrusted = try connect(RedisConnectionSettings(
                endpoint: endpoint, tls: try TLSContext.verifyingClient(caFile: stranger.certificate)))
            #expect(untrusted.connection == nil && untrusted.failure != nil)

            let elsewhere = try authority.serverCertificate(named: "elsewhere", subjectAltName: "IP:127.0.0.2")
            let misnamed = try RedisTestServer(arguments: ["--tls-cert-file", elsewhere.certificate, "--tls-key-file", elsewhere.key,
                                                           "--tls-ca-cert-file", authority.certificate,
                                                           "--tls-auth-clients", "no"], tlsOnly: true)
            let wrongName = try connect(RedisConnectionSettings(
                endpoint: try RedisEndpoint.parse("rediss://127.0.0.1:\(misnamed.port)"),
                tls: try TLSContext.verifyingClient(caFile: authority.certificate)))
            #expect(wrongName.connection == nil && wrongName.failure != nil)
            // And plain RESP to the TLS port is not mistaken for a server.
            let plain = try connect(RedisConnectionSettings(endpoint: endpoint, connectTimeout: .milliseconds(500)))
            #expect(plain.connection == nil)
        }
    }

    /// A paused server (SIGSTOP: sockets open, nothing answered) fails the waiting command
    /// within the command timeout, and the connection with it.
    @Test func aPausedServerFailsACommandWithinTheTimeout() async throws {
        try await offThePool {
            let server = try RedisTestServer()
            let closedReason = Mutex<String?>(nil)
            let outcome = try connect(RedisConnectionSettings(endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port),
                                                              commandTimeout: .milliseconds(300)),
                                      closed: { reason in closedReason.withLock { $0 = reason ?? "nil" } })
            let connection = try #require(outcome.connection)
            server.pause()
            defer { server.resume() }
            let started = DispatchTime.now().uptimeNanoseconds
            let reply = try command(connection, ["GET", "k"])
            let waited = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            #expect(reply == .disconnected)
            #expect(waited >= 0.29 && waited < 0.6, "answered after \(waited) s")
            // `closed` runs on the loop right after the waiting command heard of it.
            for _ in 0..<100 where closedReason.withLock({ $0 }) == nil { usleep(10_000) }
            #expect(closedReason.withLock { $0 }?.contains(RedisConnection.timeoutReason) == true)
        }
    }

    /// A subscribed connection with nothing to receive still finds out (its keepalive PING
    /// goes unanswered), and PINGs between messages do not disturb them.
    @Test func anIdleSubscriptionNoticesAPausedServer() async throws {
        try await offThePool {
            let server = try RedisTestServer()
            let settings = RedisConnectionSettings(endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port),
                                                   commandTimeout: .milliseconds(300), keepaliveInterval: .milliseconds(5))
            let subscriber = try #require(try connect(settings).connection)
            let publisher = try #require(try connect(settings).connection)
            let count = 3_000
            let endedAt = Mutex<UInt64?>(nil)
            let received: [String] = try onLoop { done in
                var received: [String] = []
                subscriber.subscribe(["bus"]) { reply in
                    if reply == .disconnected { endedAt.withLock { $0 = DispatchTime.now().uptimeNanoseconds } }
                    guard case .array(let parts) = reply, parts.count == 3 else { return }
                    if parts[0].text == "subscribe" {
                        // Spread over a few keepalive intervals, so PINGs fall between messages.
                        // Each timer sends the next message, not its own: timers this close may
                        // fire out of their deadlines' order, the messages must not.
                        let next = Mutex(0)
                        for n in 0..<count {
                            loop.queue.asyncAfter(deadline: .now() + .microseconds(n * 10)) {
                                let index = next.withLock { value in
                                    defer { value += 1 }
                                    return value
                                }
                                publisher.send(["PUBLISH", "bus", "m\(index)"]) { _ in }
                            }
                        }
                    } else if parts[0].text == "message", let text = parts[2].text {
                        received.append(text)
                        if received.count == count { done(received) }
                    }
                }
            }
            #expect(received == (0..<count).map { "m\($0)" })
            server.pause()
            defer { server.resume() }
            let started = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<200 where endedAt.withLock({ $0 }) == nil { usleep(10_000) }
            let ended = try #require(endedAt.withLock { $0 }, "the subscription did not notice")
            let waited = Double(ended - started) / 1e9
            #expect(waited < 0.6, "noticed after \(waited) s")
        }
    }
}
