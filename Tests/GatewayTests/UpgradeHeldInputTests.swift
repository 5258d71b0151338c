import Foundation
import ServiceTestSupport
import Testing
import WebSocket
@testable import Gateway

/// What clients send behind upgrade requests that wait for the core (RFC 6455 says they
/// must not, some do): each loop holds at most `heldBeforeUpgradeBytesPerLoop` of it
/// however many upgrades wait, a connection whose bytes do not fit is closed, one that
/// keeps sending is read no further until its decision, and every byte held is handed
/// to its WebSocket once it opens.
@Suite(.serialized) struct UpgradeHeldInputTests {
    static let loopBudget = 128 * 1024

    static func gateway() async throws -> TestGateway {
        try await TestGateway.chat { settings, chat in
            settings.heldBeforeUpgradeBytesPerLoop = loopBudget
            chat.limits.maxConnectionsPerUser = 5_000
        }
    }

    /// (live connections, held bytes) of each loop.
    static func loopState(_ gateway: TestGateway) -> [(connections: Int, held: Int)] {
        gateway.server.group.loops.map { loop in loop.queue.sync { (loop.connectionCount, loop.heldInput.held) } }
    }

    /// An upgrade request for `token` followed by one masked text frame holding a `me`
    /// request padded with spaces to `bytes`.
    static func meFrame(id: Int, bytes: Int) -> [UInt8] {
        var encoder = WebSocketConnection(role: .client, maxMessageBytes: 1 << 24)
        let head = "{\"id\":\(id),\"type\":\"me\""
        let text = head + String(repeating: " ", count: max(0, bytes - head.count - 1)) + "}"
        return encoder.encodeText(Array(text.utf8))
    }

    /// The ids of the next `count` replies (events skipped); an error reply counts as id -1.
    static func okIDs(_ client: TestClient, count: Int) throws -> [Int] {
        var ids: [Int] = []
        while ids.count < count {
            let frame = try JSONSerialization.jsonObject(with: Data(client.nextText().utf8)) as? [String: Any]
            guard let type = frame?["type"] as? String, type != "event" else { continue }
            ids.append(type == "ok" ? frame?["id"] as? Int ?? -1 : -1)
        }
        return ids
    }

    static func upgradeRequest(token: String) -> String {
        "GET /v1/ws?token=\(token) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    }

    @Test("1,000 upgrades, each with 4 KB behind it, against a held core: no loop holds more than its budget, those that did not fit are closed, the rest open and answer what they sent, and the budget is whole again after")
    func manyWaitingUpgradesStayWithinTheLoopBudget() async throws {
        let gateway = try await Self.gateway()
        let chat = try #require(gateway.server.router.chat)
        let token = try await gateway.token(for: "alice")
        let port = gateway.port
        let count = 1_000
        let frame = Self.meFrame(id: 1, bytes: 4_000)
        let hold = CoreHold(chat)

        let clients = try await offThePool {
            try (0..<count).map { _ in
                let client = try TestClient(port: port, timeoutSeconds: 30)
                try client.write(Array(Self.upgradeRequest(token: token).utf8) + frame)
                return client
            }
        }
        // Every connection was read: each one left holds exactly its frame.
        var settled = 0
        var states = Self.loopState(gateway)
        for _ in 0..<300 where settled < 3 {
            try await Task.sleep(for: .milliseconds(100))
            let now = Self.loopState(gateway)
            let consistent = now.allSatisfy { $0.held == $0.connections * frame.count } && now.contains { $0.held > 0 }
            settled = consistent && now.map(\.connections) == states.map(\.connections) ? settled + 1 : 0
            states = now
        }
        #expect(settled == 3, "loops never settled: \(states)")
        for state in states {
            #expect(state.held <= Self.loopBudget, "a loop holds \(state.held) bytes, over its budget")
        }
        let waiting = states.map(\.connections).reduce(0, +)
        #expect(waiting > 0 && waiting <= 2 * (Self.loopBudget / frame.count), "\(waiting) upgrades held")

        hold.end()
        let (opened, closed) = try await offThePool {
            var (opened, closed) = (0, 0)
            for client in clients {
                guard let response = try? client.readResponse() else {
                    closed += 1
                    continue
                }
                #expect(response.status == 101)
                let ids = try Self.okIDs(client, count: 1)
                #expect(ids == [1], "the held request was not answered")
                opened += 1
            }
            return (opened, closed)
        }
        #expect(opened == waiting)
        #expect(opened + closed == count)
        withExtendedLifetime(clients) {}

        var remaining = Self.loopState(gateway)
        for _ in 0..<100 where remaining.contains(where: { $0.held > 0 }) {
            try await Task.sleep(for: .milliseconds(50))
            remaining = Self.loopState(gateway)
        }
        #expect(remaining.allSatisfy { $0.held == 0 }, "bytes still counted as held: \(remaining)")
    }

    @Test("a client that keeps sending behind its upgrade is read no further until the decision: three 30 KB requests (more than one frame's bound in all) are all answered once it opens")
    func aWaitingUpgradeStopsReading() async throws {
        let gateway = try await Self.gateway()
        let chat = try #require(gateway.server.router.chat)
        let token = try await gateway.token(for: "alice")
        let port = gateway.port
        let hold = CoreHold(chat)

        let clients = try await offThePool {
            let clients = try (0..<4).map { _ in
                let client = try TestClient(port: port, timeoutSeconds: 30)
                try client.write(Self.upgradeRequest(token: token))
                return client
            }
            usleep(200_000)  // the requests are being decided
            for client in clients { try client.write(Self.meFrame(id: 1, bytes: 30_000)) }
            usleep(200_000)  // read, and reading paused
            for client in clients { try client.write(Self.meFrame(id: 2, bytes: 30_000) + Self.meFrame(id: 3, bytes: 30_000)) }
            return clients
        }
        try await Task.sleep(for: .milliseconds(300))
        for state in Self.loopState(gateway) {
            #expect(state.held <= state.connections * 31_000, "a waiting upgrade read past its first request: \(state)")
        }
        hold.end()
        try await offThePool {
            for client in clients {
                let status = try client.readResponse().status
                #expect(status == 101)
                let ids = try Self.okIDs(client, count: 3)
                #expect(ids == [1, 2, 3])
            }
        }
    }
}
