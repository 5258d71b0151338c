import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §4 user requests, with the exact §3 shapes.
@Suite("User requests")
struct UserRequestTests {
    @Test("me: {user, blockedUserIds} with the full User shape")
    func me() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let result = try alice.ok("me")
        #expect(Set(result.keys) == ["user", "blockedUserIds"])
        let user = try #require(result["user"] as? [String: Any])
        #expect(Shapes.user.isSubset(of: Shapes.keys(user)), "\(user.keys)")
        #expect(Shapes.keys(user).subtracting(Shapes.user).isSubset(of: ["hasBlockedMe"]))
        #expect(user["id"] as? String == "alice")
        #expect(user["name"] is String)
        #expect(user["image"] is String)
        #expect(user["metadata"] is [String: Any])
        #expect(user["online"] as? Bool == true)
        #expect(user["lastSeenAt"] as? Int != nil)
        #expect(user["blockedByMe"] as? Bool == false)
        #expect((result["blockedUserIds"] as? [Any])?.isEmpty == true)
    }

    @Test("user.get returns a User; an unknown id is ERR_UID_NOT_FOUND")
    func userGet() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob"], metadata: ["bob": ["team": "blue"]])
        let alice = try await gateway.connect("alice")
        let bob = try alice.ok("user.get", ["userId": "bob"])
        #expect(Shapes.user.isSubset(of: Shapes.keys(bob)))
        #expect(bob["id"] as? String == "bob")
        #expect(bob["name"] as? String == "Name of bob")
        #expect(bob["metadata"] as? [String: String] == ["team": "blue"])
        #expect(bob["online"] as? Bool == false)
        let bobClient = try await gateway.connect("bob")
        _ = bobClient
        #expect(try alice.ok("user.get", ["userId": "bob"])["online"] as? Bool == true)
        #expect(try alice.errorCode("user.get", ["userId": "ghost"]) == "ERR_UID_NOT_FOUND")
    }

    @Test("user.list by userIds; more than 250 ids is ERR_TOO_MANY_IDS")
    func userListByIDs() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["u1", "u2", "u3"])
        let alice = try await gateway.connect("alice")
        let result = try alice.ok("user.list", ["userIds": ["u3", "u1", "ghost"]])
        #expect(Set(result.keys) == ["users", "next"])
        let users = try #require(result["users"] as? [[String: Any]])
        #expect(Set(users.ids) == ["u1", "u3"])
        #expect(users.allSatisfy { Shapes.user.isSubset(of: Shapes.keys($0)) })
        #expect(result["next"] is NSNull)
        let many = (0..<251).map { "x\($0)" }
        #expect(try alice.errorCode("user.list", ["userIds": many]) == "ERR_TOO_MANY_IDS")
        #expect(try alice.ok("user.list", ["userIds": Array(many.prefix(250))])["users"] as? [Any] != nil)
    }

    @Test("user.list filters by metadataKey + metadataValues")
    func userListMetadata() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["r1", "r2", "r3", "r4"], metadata: [
            "r1": ["role": "admin"], "r2": ["role": "member"], "r3": ["role": "guest"], "r4": ["team": "admin"],
        ])
        let alice = try await gateway.connect("alice")
        let result = try alice.ok("user.list", ["metadataKey": "role", "metadataValues": ["admin", "guest"]])
        #expect(Set((result["users"] as? [[String: Any]] ?? []).ids) == ["r1", "r3"])
        let none = try alice.ok("user.list", ["metadataKey": "role", "metadataValues": ["owner"]])
        #expect((none["users"] as? [Any])?.isEmpty == true)
    }

    @Test("user.list limit must be 1-100: ERR_INVALID_LIMIT")
    func userListLimits() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        #expect(try alice.errorCode("user.list", ["limit": 0]) == "ERR_INVALID_LIMIT")
        #expect(try alice.errorCode("user.list", ["limit": 101]) == "ERR_INVALID_LIMIT")
        #expect(try alice.errorCode("user.list", ["limit": -1]) == "ERR_INVALID_LIMIT")
        #expect(try alice.ok("user.list", ["limit": 1])["users"] as? [Any] != nil)
        #expect(try alice.ok("user.list", ["limit": 100])["users"] as? [Any] != nil)
    }

    @Test("user.list pages with cursors: 3 pages, no duplicates or gaps; a tampered cursor is ERR_INVALID_CURSOR")
    func userListPaging() async throws {
        let gateway = try await TestGateway.chat()
        let everyone = ["p1", "p2", "p3", "p4", "p5", "p6"]
        try await gateway.createUsers(everyone)
        let alice = try await gateway.connect("alice")  // the 7th user
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        var firstCursor: String?
        repeat {
            var fields: [String: Any] = ["limit": 3]
            if let cursor { fields["cursor"] = cursor }
            let page = try alice.ok("user.list", fields)
            let users = try #require(page["users"] as? [[String: Any]])
            #expect(users.count <= 3)
            seen += users.ids
            cursor = page["next"] as? String
            if pages == 0 { firstCursor = cursor }
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 3)
        #expect(seen.count == 7)
        #expect(Set(seen) == Set(everyone + ["alice"]))
        let issued = try #require(firstCursor)
        // Flip one character of the payload and of the tag (not the last one, whose low bits are padding).
        for index in [issued.startIndex, issued.index(issued.endIndex, offsetBy: -3)] {
            var chars = Array(issued)
            let offset = issued.distance(from: issued.startIndex, to: index)
            chars[offset] = chars[offset] == "A" ? "B" : "A"
            #expect(try alice.errorCode("user.list", ["limit": 3, "cursor": String(chars)]) == "ERR_INVALID_CURSOR")
        }
        #expect(try alice.errorCode("user.list", ["cursor": "not-a-cursor"]) == "ERR_INVALID_CURSOR")
        // The untouched cursor still works.
        #expect(try alice.ok("user.list", ["limit": 3, "cursor": issued])["users"] as? [Any] != nil)
    }

    @Test("user.update changes name, image and metadata, visible to others")
    func userUpdate() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let updated = try alice.ok("user.update", ["name": "Alice", "image": "https://img/a.png", "metadata": ["city": "Oslo", "lang": "nb"]])
        #expect(Shapes.user.isSubset(of: Shapes.keys(updated)))
        #expect(updated["id"] as? String == "alice")
        #expect(updated["name"] as? String == "Alice")
        #expect(updated["image"] as? String == "https://img/a.png")
        #expect(updated["metadata"] as? [String: String] == ["city": "Oslo", "lang": "nb"])
        let seen = try bob.ok("user.get", ["userId": "alice"])
        #expect(seen["name"] as? String == "Alice")
        #expect(seen["image"] as? String == "https://img/a.png")
        #expect(seen["metadata"] as? [String: String] == ["city": "Oslo", "lang": "nb"])
        // Only the given fields change.
        let renamed = try alice.ok("user.update", ["name": "Alice L."])
        #expect(renamed["image"] as? String == "https://img/a.png")
        #expect(renamed["metadata"] as? [String: String] == ["city": "Oslo", "lang": "nb"])
        let filtered = try bob.ok("user.list", ["metadataKey": "city", "metadataValues": ["Oslo"]])
        #expect((filtered["users"] as? [[String: Any]] ?? []).ids == ["alice"])
    }
}
