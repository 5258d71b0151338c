import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §10 admin block endpoints: server-side block / unblock / list.
@Suite("Block admin API")
struct BlockAdminTests {
    @Test("POST /v1/admin/users/{id}/blocks blocks at once for the user's live connections; DELETE unblocks")
    func adminBlockAndUnblock() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let phone = try await gateway.connect("alice", query: "&device=phone")
        let tablet = try await gateway.connect("alice", query: "&device=tablet&hideBlocked=1")
        let bob = try await gateway.connect("bob")
        let carol = try await gateway.connect("carol")
        let pair = try bob.createGroup(["alice"])
        let group = try carol.createGroup(["alice", "bob"])
        try gateway.say(bob, pair, "pair before")
        #expect(try phone.receivedTexts() == ["pair before"])
        #expect(try tablet.receivedTexts() == ["pair before"])

        let blocked = try await gateway.admin("POST", "/v1/admin/users/alice/blocks", body: ["userIds": ["bob", "ghost", "alice"]])
        #expect(blocked.status == 200, "\(blocked.body)")
        #expect(blocked.headers["content-type"] == "application/json")
        #expect(blocked.json["results"] as? [String: String]
                == ["bob": "success", "ghost": "ERR_UID_NOT_FOUND", "alice": "ERR_CANNOT_BLOCK_SELF"])
        // The answer is out: alice's live connections already filter bob.
        try gateway.say(bob, pair, "pair during")
        try gateway.say(bob, group, "group during")
        #expect(try phone.receivedTexts() == ["group during"])
        #expect(try tablet.receivedTexts() == [], "the hideBlocked=1 connection was not updated by the admin block")
        // Every connection of alice is told (none of them asked).
        #expect(try phone.nextEvent("user.blocked")["data"] as? [String: String] == ["userId": "bob"])
        #expect(try tablet.nextEvent("user.blocked")["data"] as? [String: String] == ["userId": "bob"])
        #expect(try phone.ok("me")["blockedUserIds"] as? [String] == ["bob"])
        #expect(try phone.ok("user.get", ["userId": "bob"])["blockedByMe"] as? Bool == true)
        #expect(try phone.historyTexts(pair) == ["pair before"])

        // Idempotent.
        let again = try await gateway.admin("POST", "/v1/admin/users/alice/blocks", body: ["userIds": ["bob"]])
        #expect(again.json["results"] as? [String: String] == ["bob": "success"])

        let unblocked = try await gateway.admin("DELETE", "/v1/admin/users/alice/blocks/bob")
        #expect(unblocked.status == 200, "\(unblocked.body)")
        #expect(unblocked.json["results"] as? [String: String] == ["bob": "success"])
        try gateway.say(bob, pair, "pair after")
        try gateway.say(bob, group, "group after")
        #expect(try phone.receivedTexts() == ["pair after", "group after"])
        #expect(try tablet.receivedTexts() == ["pair after", "group after"])
        #expect(try phone.nextEvent("user.unblocked")["data"] as? [String: String] == ["userId": "bob"])
        #expect(try tablet.nextEvent("user.unblocked")["data"] as? [String: String] == ["userId": "bob"])
        #expect(try phone.ok("me")["blockedUserIds"] as? [String] == [])
        // The message sent in the 1-to-1 during the block stays hidden.
        #expect(try phone.historyTexts(pair) == ["pair before", "pair after"])

        let ghost = try await gateway.admin("DELETE", "/v1/admin/users/alice/blocks/ghost")
        #expect(ghost.json["results"] as? [String: String] == ["ghost": "ERR_UID_NOT_FOUND"])
    }

    @Test("admin block errors: unknown user 404, no ids 400, 101 ids ERR_TOO_MANY_IDS, no key 401")
    func adminBlockErrors() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        try await gateway.createUsers(["alice", "bob"])
        let unknown = try await gateway.admin("POST", "/v1/admin/users/nobody/blocks", body: ["userIds": ["bob"]])
        #expect(unknown.status == 404)
        #expect(unknown.errorCode == "ERR_UID_NOT_FOUND")
        let empty = try await gateway.admin("POST", "/v1/admin/users/alice/blocks", body: ["userIds": [String]()])
        #expect(empty.status == 400)
        #expect(empty.errorCode == "ERR_BAD_REQUEST")
        #expect(empty.isErrorShape)
        let tooMany = try await gateway.admin("POST", "/v1/admin/users/alice/blocks",
                                              body: ["userIds": (1...101).map { "u\($0)" }])
        #expect(tooMany.status == 400)
        #expect(tooMany.errorCode == "ERR_TOO_MANY_IDS")
        let noKey = try await gateway.http("POST", "/v1/admin/users/alice/blocks", body: ["userIds": ["bob"]])
        #expect(noKey.status == 401)
        let noKeyList = try await gateway.http("GET", "/v1/admin/users/alice/blocks")
        #expect(noKeyList.status == 401)
        // Nothing was blocked by the failed calls.
        let list = try await gateway.admin("GET", "/v1/admin/users/alice/blocks")
        #expect((list.json["users"] as? [[String: Any]])?.isEmpty == true)
    }

    @Test("GET /v1/admin/users/{id}/blocks lists every direction (revealed to the backend), with limit and cursor")
    func adminList() async throws {
        let (gateway, _) = try await BlockFixture.gateway(reveal: false)
        try await gateway.createUsers(["alice", "bob", "carol", "dave", "erin", "frank"])
        try await gateway.adminBlock("alice", ["bob", "dave", "erin", "frank"])
        try await gateway.adminBlock("carol", ["alice"])
        try await gateway.adminBlock("bob", ["alice"])

        func ids(_ query: String) async throws -> (ids: [String], next: String?, status: Int) {
            let response = try await gateway.admin("GET", "/v1/admin/users/alice/blocks\(query)")
            return ((response.json["users"] as? [[String: Any]])?.ids ?? [], response.json["next"] as? String, response.status)
        }
        #expect(try await ids("").ids == ["bob", "dave", "erin", "frank"])
        #expect(try await ids("?direction=byMe").ids == ["bob", "dave", "erin", "frank"])
        #expect(try await ids("?direction=me").ids == ["bob", "carol"])
        #expect(try await ids("?direction=both").ids == ["bob", "carol", "dave", "erin", "frank"])

        let first = try await ids("?direction=both&limit=2")
        #expect(first.ids == ["bob", "carol"])
        let cursor = try #require(first.next)
        let second = try await ids("?direction=both&limit=2&cursor=\(cursor)")
        #expect(second.ids == ["dave", "erin"])
        let third = try await ids("?direction=both&limit=2&cursor=\(try #require(second.next))")
        #expect(third.ids == ["frank"])
        #expect(third.next == nil)

        let users = try #require(try await gateway.admin("GET", "/v1/admin/users/alice/blocks?direction=both").json["users"]
                                 as? [[String: Any]])
        let bob = try #require(users.first { $0["id"] as? String == "bob" })
        #expect(bob["blockedByMe"] as? Bool == true)

        for bad in ["?limit=0", "?limit=101", "?limit=ten"] {
            let response = try await gateway.admin("GET", "/v1/admin/users/alice/blocks\(bad)")
            #expect(response.status == 400, "\(bad)")
            #expect(response.errorCode == "ERR_INVALID_LIMIT", "\(bad)")
        }
        let badDirection = try await gateway.admin("GET", "/v1/admin/users/alice/blocks?direction=sideways")
        #expect(badDirection.status == 400)
        #expect(badDirection.errorCode == "ERR_BAD_REQUEST")
        let badCursor = try await gateway.admin("GET", "/v1/admin/users/alice/blocks?cursor=forged.cursor")
        #expect(badCursor.status == 400)
        #expect(badCursor.errorCode == "ERR_INVALID_CURSOR")
        let unknown = try await gateway.admin("GET", "/v1/admin/users/nobody/blocks")
        #expect(unknown.status == 404)
        #expect(unknown.errorCode == "ERR_UID_NOT_FOUND")

        // The same blocks as the users see them.
        let alice = try await gateway.connect("alice")
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == ["bob", "dave", "erin", "frank"])
    }
}
