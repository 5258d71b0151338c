import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §4 `user.block`, `user.unblock`, `user.blocked.list`, `me`; §3 User
/// `blockedByMe` / `hasBlockedMe`; §5 `revealBlockedBy`.
@Suite("Block requests")
struct BlockRequestTests {
    @Test("user.block / user.unblock: results per id, idempotent, reflected in me.blockedUserIds")
    func batchResults() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")

        let blocked = try alice.blockResults("user.block", ["bob", "ghost", "alice", "carol"])
        #expect(blocked == ["bob": "success", "ghost": "ERR_UID_NOT_FOUND", "alice": "ERR_CANNOT_BLOCK_SELF", "carol": "success"])
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == ["bob", "carol"])

        // Blocking again is success and changes nothing.
        #expect(try alice.blockResults("user.block", ["bob"]) == ["bob": "success"])
        #expect(try alice.blockResults("user.block", ["bob", "bob"]) == ["bob": "success"])
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == ["bob", "carol"])

        let unblocked = try alice.blockResults("user.unblock", ["carol", "ghost", "alice"])
        #expect(unblocked == ["carol": "success", "ghost": "ERR_UID_NOT_FOUND", "alice": "ERR_CANNOT_BLOCK_SELF"])
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == ["bob"])
        // Unblocking a user that is not blocked is success too.
        #expect(try alice.blockResults("user.unblock", ["carol"]) == ["carol": "success"])
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == ["bob"])

        // The block belongs to alice only.
        let bob = try await gateway.connect("bob")
        #expect(try bob.ok("me")["blockedUserIds"] as? [String] == [])
    }

    @Test("user.block / user.unblock take 1 to 100 ids: none is ERR_BAD_REQUEST, 101 is ERR_TOO_MANY_IDS",
          arguments: ["user.block", "user.unblock"])
    func idCountBounds(type: String) async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        #expect(try alice.errorCode(type, ["userIds": [String]()]) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode(type) == "ERR_BAD_REQUEST")
        #expect(try alice.errorCode(type, ["userIds": "bob"]) == "ERR_BAD_REQUEST")
        let hundredOne = (1...101).map { "u\($0)" }
        #expect(try alice.errorCode(type, ["userIds": hundredOne]) == "ERR_TOO_MANY_IDS")
        let hundred = Array(hundredOne.prefix(100))
        let results = try alice.blockResults(type, hundred)
        #expect(results.count == 100)
        #expect(Set(results.values) == ["ERR_UID_NOT_FOUND"])
        #expect(try alice.ok("me")["blockedUserIds"] as? [String] == [])
    }

    @Test("User.blockedByMe always; hasBlockedMe only when revealBlockedBy", arguments: [false, true])
    func userFlags(reveal: Bool) async throws {
        let (gateway, _) = try await BlockFixture.gateway(reveal: reveal)
        try await gateway.createUsers(["carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        _ = try alice.blockResults("user.block", ["bob"])

        let bobSeenByAlice = try alice.ok("user.get", ["userId": "bob"])
        #expect(bobSeenByAlice["blockedByMe"] as? Bool == true)
        let aliceSeenByBob = try bob.ok("user.get", ["userId": "alice"])
        #expect(aliceSeenByBob["blockedByMe"] as? Bool == false)
        let carolSeenByBob = try bob.ok("user.get", ["userId": "carol"])
        if reveal {
            #expect(aliceSeenByBob["hasBlockedMe"] as? Bool == true)
            #expect(carolSeenByBob["hasBlockedMe"] as? Bool == false)
            #expect(bobSeenByAlice["hasBlockedMe"] as? Bool == false)
            #expect(Shapes.keys(aliceSeenByBob) == Shapes.user.union(["hasBlockedMe"]))
        } else {
            #expect(aliceSeenByBob["hasBlockedMe"] == nil)
            #expect(bobSeenByAlice["hasBlockedMe"] == nil)
            // Same shape whether or not the viewed user blocked the viewer.
            #expect(Shapes.keys(aliceSeenByBob) == Shapes.user)
            #expect(Shapes.keys(aliceSeenByBob) == Shapes.keys(carolSeenByBob))
        }
        // user.list and me carry the same flags.
        let listed = try #require(try bob.ok("user.list", ["userIds": ["alice"]])["users"] as? [[String: Any]]).first
        #expect(listed?["blockedByMe"] as? Bool == false)
        #expect((listed?["hasBlockedMe"] as? Bool) == (reveal ? true : nil))
        let meUser = try #require(try alice.ok("me")["user"] as? [String: Any])
        #expect(meUser["blockedByMe"] as? Bool == false)

        // Unblocking clears the flags.
        _ = try alice.blockResults("user.unblock", ["bob"])
        #expect(try alice.ok("user.get", ["userId": "bob"])["blockedByMe"] as? Bool == false)
        #expect((try bob.ok("user.get", ["userId": "alice"])["hasBlockedMe"] as? Bool) == (reveal ? false : nil))
    }

    @Test("user.blocked.list direction: byMe by default; me and both are ERR_FORBIDDEN unless revealed",
          arguments: [false, true])
    func directions(reveal: Bool) async throws {
        let (gateway, _) = try await BlockFixture.gateway(reveal: reveal)
        try await gateway.createUsers(["alice", "bob", "carol", "dave", "erin"])
        try await gateway.adminBlock("carol", ["alice"])
        try await gateway.adminBlock("bob", ["alice"])
        let alice = try await gateway.connect("alice")
        _ = try alice.blockResults("user.block", ["bob", "dave"])

        let byDefault = try #require(try alice.ok("user.blocked.list")["users"] as? [[String: Any]])
        #expect(byDefault.ids == ["bob", "dave"])
        #expect(byDefault.allSatisfy { $0["blockedByMe"] as? Bool == true })
        let byMe = try alice.ok("user.blocked.list", ["direction": "byMe"])
        #expect((byMe["users"] as? [[String: Any]])?.ids == ["bob", "dave"])
        #expect(byMe["next"] is NSNull)
        #expect(try alice.errorCode("user.blocked.list", ["direction": "sideways"]) == "ERR_BAD_REQUEST")

        if reveal {
            let me = try #require(try alice.ok("user.blocked.list", ["direction": "me"])["users"] as? [[String: Any]])
            #expect(me.ids == ["bob", "carol"])
            #expect(me.allSatisfy { $0["hasBlockedMe"] as? Bool == true })
            let both = try #require(try alice.ok("user.blocked.list", ["direction": "both"])["users"] as? [[String: Any]])
            #expect(both.ids == ["bob", "carol", "dave"])
            let flags = Dictionary(uniqueKeysWithValues: both.map {
                ($0["id"] as? String ?? "?", [$0["blockedByMe"] as? Bool ?? false, $0["hasBlockedMe"] as? Bool ?? false])
            })
            #expect(flags == ["bob": [true, true], "carol": [false, true], "dave": [true, false]])
        } else {
            #expect(try alice.errorCode("user.blocked.list", ["direction": "me"]) == "ERR_FORBIDDEN")
            #expect(try alice.errorCode("user.blocked.list", ["direction": "both"]) == "ERR_FORBIDDEN")
            // Nor can the blocked side learn it from its own byMe list.
            let bob = try await gateway.connect("bob")
            #expect((try bob.ok("user.blocked.list")["users"] as? [[String: Any]])?.ids == ["alice"])
            let erin = try await gateway.connect("erin")
            #expect(try erin.errorCode("user.blocked.list", ["direction": "me"]) == "ERR_FORBIDDEN")
        }
    }

    @Test("user.blocked.list limit must be 1-100: ERR_INVALID_LIMIT")
    func limitBounds() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let alice = try await gateway.connect("alice")
        for bad in [0, 101, -1] {
            #expect(try alice.errorCode("user.blocked.list", ["limit": bad]) == "ERR_INVALID_LIMIT")
        }
        #expect(try alice.errorCode("user.blocked.list", ["limit": "ten"]) == "ERR_BAD_REQUEST")
        #expect(try alice.ok("user.blocked.list", ["limit": 1])["users"] as? [Any] != nil)
        #expect(try alice.ok("user.blocked.list", ["limit": 100])["users"] as? [Any] != nil)
    }

    @Test("user.blocked.list search: case-insensitive prefix of id or name; userIds filter")
    func searchAndFilter() async throws {
        let (gateway, _) = try await BlockFixture.gateway()
        let people: [(String, String)] = [
            ("alfred", "Zulu"), ("zed", "Alpha Person"), ("Albert", "Bert"), ("xavier", "Sal"), ("yolanda", "Yo"),
            ("alan", "Not Blocked"),
        ]
        for (id, name) in people {
            let response = try await gateway.admin("POST", "/v1/admin/users", body: ["id": id, "name": name])
            try #require(response.status == 200)
        }
        let me = try await gateway.connect("me")
        _ = try me.blockResults("user.block", ["alfred", "zed", "Albert", "xavier", "yolanda"])

        func search(_ text: String, _ extra: [String: Any] = [:]) throws -> [String] {
            var fields = extra
            fields["search"] = text
            return (try me.ok("user.blocked.list", fields)["users"] as? [[String: Any]])?.ids ?? ["<no users>"]
        }
        // "al": ids alfred, Albert; name "Alpha Person" (zed). Not alan (not blocked), not xavier ("Sal").
        #expect(try search("al") == ["Albert", "alfred", "zed"])
        #expect(try search("AL") == ["Albert", "alfred", "zed"])
        #expect(try search("aLpHa") == ["zed"])
        #expect(try search("zulu") == ["alfred"])
        #expect(try search("z") == ["alfred", "zed"])
        #expect(try search("lph") == [])  // prefix only
        #expect(try search("nobody") == [])
        #expect(try search("") == ["Albert", "alfred", "xavier", "yolanda", "zed"])

        func filtered(_ ids: [String], _ extra: [String: Any] = [:]) throws -> [String] {
            var fields = extra
            fields["userIds"] = ids
            return (try me.ok("user.blocked.list", fields)["users"] as? [[String: Any]])?.ids ?? ["<no users>"]
        }
        #expect(try filtered(["zed", "yolanda", "alan", "ghost"]) == ["yolanda", "zed"])
        #expect(try filtered(["zed", "alfred", "xavier"], ["search": "AL"]) == ["alfred", "zed"])
    }

    @Test("user.blocked.list pages with cursors over 3 pages; an edited cursor is ERR_INVALID_CURSOR")
    func cursorPaging() async throws {
        let (gateway, _) = try await BlockFixture.gateway(reveal: true)
        let targets = (1...7).map { "t\($0)" }
        try await gateway.createUsers(targets)
        let alice = try await gateway.connect("alice")
        _ = try alice.blockResults("user.block", targets)

        var seen: [String] = []
        var cursor: String?
        var cursors: [String] = []
        var pages = 0
        repeat {
            var fields: [String: Any] = ["limit": 3]
            if let cursor { fields["cursor"] = cursor }
            let page = try alice.ok("user.blocked.list", fields)
            let users = try #require(page["users"] as? [[String: Any]])
            #expect(users.count == (pages < 2 ? 3 : 1))
            seen += users.ids
            cursor = page["next"] as? String
            if let cursor { cursors.append(cursor) }
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == targets)

        let issued = try #require(cursors.first)
        // Flip one character of the payload and one of the tag.
        for offset in [0, issued.count - 3] {
            var chars = Array(issued)
            chars[offset] = chars[offset] == "A" ? "B" : "A"
            #expect(try alice.errorCode("user.blocked.list", ["limit": 3, "cursor": String(chars)]) == "ERR_INVALID_CURSOR")
        }
        // Rewrite the payload to point elsewhere, keeping the tag: the tag no longer matches.
        let parts = issued.split(separator: ".")
        try #require(parts.count == 2)
        let payload = try #require(base64URLDecode(String(parts[0])))
        let forged = String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "t3", with: "t1")
        try #require(forged != String(decoding: payload, as: UTF8.self))
        let forgedCursor = base64URLEncode(Array(forged.utf8)) + "." + parts[1]
        #expect(try alice.errorCode("user.blocked.list", ["limit": 3, "cursor": forgedCursor]) == "ERR_INVALID_CURSOR")
        #expect(try alice.errorCode("user.blocked.list", ["cursor": "not-a-cursor"]) == "ERR_INVALID_CURSOR")
        // A cursor of another list is not accepted either.
        let userPage = try alice.ok("user.list", ["limit": 1])
        let userCursor = try #require(userPage["next"] as? String)
        #expect(try alice.errorCode("user.blocked.list", ["limit": 3, "cursor": userCursor]) == "ERR_INVALID_CURSOR")
        // Nor a byMe cursor for direction both.
        #expect(try alice.errorCode("user.blocked.list", ["direction": "both", "limit": 3, "cursor": issued]) == "ERR_INVALID_CURSOR")
        // The untouched cursor still works.
        #expect((try alice.ok("user.blocked.list", ["limit": 3, "cursor": issued])["users"] as? [[String: Any]])?.ids
                == ["t4", "t5", "t6"])
    }
}

func base64URLEncode(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

func base64URLDecode(_ text: String) -> [UInt8]? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64).map(Array.init)
}
