import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// U+0000 in any string the gateway would store is refused before anything is written,
/// the same on SQLite and PostgreSQL (PostgreSQL cannot store it in text), and a refused
/// request never costs another user's write.
@Suite(.serialized)
struct StoredStringTests {
    enum Backend: String, CaseIterable { case sqlite, postgres }

    private func withGateway(_ backend: Backend, _ body: (TestGateway) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            try await body(try await TestGateway.chat())
        case .postgres:
            guard PostgresTestDatabase.isAvailable else { return }
            let database = try await PostgresTestDatabase.make()
            do {
                try await body(try await TestGateway.chat { _, chat in chat.storage.backend = .postgres; chat.storage.postgresURL = database.url })
            } catch {
                await database.drop()
                throw error
            }
            await database.drop()
        }
    }

    @Test("every request field that is stored refuses U+0000 with ERR_BAD_REQUEST; honest sends beside it all succeed",
          arguments: Backend.allCases)
    func nulIsRefusedEverywhere(backend: Backend) async throws {
        try await withGateway(backend) { gateway in
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            let channel = try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String)
            let other = try #require(try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"]])["id"] as? String)
            let nul = "a\u{0}b"
            let refused: [(String, [String: Any])] = [
                ("message.send", ["channelId": channel, "text": nul]),
                ("message.send", ["channelId": channel, "text": "ok", "clientMessageId": nul]),
                ("user.update", ["name": nul]),
                ("user.update", ["image": nul]),
                ("user.update", ["metadata": ["k": nul]]),
                ("user.update", ["metadata": [nul: "v"]]),
                ("channel.create", ["channelType": "group", "userIds": ["bob"], "name": nul]),
                ("channel.update", ["channelId": channel, "name": nul]),
            ]
            // The bad requests interleaved with 40 honest sends from bob in two channels, all pipelined.
            var honest: [Int] = []
            var bad: [Int] = []
            for round in 0..<40 {
                honest.append(try bob.fire("message.send", ["channelId": round % 2 == 0 ? channel : other, "text": "honest \(round)"]))
                if round < refused.count { bad.append(try alice.fire(refused[round].0, refused[round].1)) }
            }
            let badReplies = try alice.replies(count: bad.count)
            for (index, id) in bad.enumerated() {
                let error = badReplies[id]?["error"] as? [String: Any]
                #expect(error?["code"] as? String == "ERR_BAD_REQUEST", "\(refused[index].0) \(refused[index].1.keys.sorted())")
            }
            let honestReplies = try bob.replies(count: honest.count)
            #expect(honest.allSatisfy { honestReplies[$0]?["type"] as? String == "ok" })
            #expect(try alice.fullHistory(channel).count == 20)
            #expect(try alice.fullHistory(other).count == 20)
            #expect((try alice.ok("me")["user"] as? [String: Any])?["name"] as? String != nul)
            // The admin API refuses it too, and a signed token carrying it in a profile claim.
            let created = try await gateway.admin("POST", "/v1/admin/users", body: ["id": "carol", "name": nul])
            #expect(created.status == 400 && created.body.contains("ERR_BAD_REQUEST"), "\(created.status) \(created.body)")
            let token = TokenHardeningTests.sign(header: #"{"alg":"HS256","typ":"JWT"}"#,
                                                 payload: #"{"sub":"dave","exp":9999999999,"name":"a\u0000b"}"#,
                                                 secret: gateway.chat.auth.jwtSecret)
            #expect(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response.status == 401)
            #expect(try alice.send(channel, "still fine")["seq"] as? Int == 21)
        }
    }
}
