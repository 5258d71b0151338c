import ChatCore
import WebSocket
import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// PROTOCOL.md §16 over loopback, on SQLite and PostgreSQL: each moderation request and
/// admin call, its errors, and what the other members get.
@Suite("Moderation requests", .serialized)
struct ModerationRequestTests {
    enum Backend: String, CaseIterable { case sqlite, postgres }

    /// A gateway on `backend` (PostgreSQL: a fresh database, skipped when none is set up),
    /// with a JSON Lines push file.
    private func withGateway(_ backend: Backend, _ body: (TestGateway, PushLog) async throws -> Void) async throws {
        let pushPath = TestGateway.temporaryDirectory() + "/push.jsonl"
        let push = { (chat: inout GatewayConfiguration) in chat.push = GatewayConfiguration.Push(sink: .file, file: pushPath) }
        switch backend {
        case .sqlite:
            try await body(try await TestGateway.chat { _, chat in push(&chat) }, PushLog(path: pushPath))
        case .postgres:
            guard PostgresTestDatabase.isAvailable else { return }
            let database = try await PostgresTestDatabase.make()
            do {
                let gateway = try await TestGateway.chat { _, chat in
                    chat.storage.backend = .postgres
                    chat.storage.postgresURL = database.url
                    push(&chat)
                }
                try await body(gateway, PushLog(path: pushPath))
            } catch {
                await database.drop()
                throw error
            }
            await database.drop()
        }
    }

    @Test("roles, freeze and slow mode: who may set them, what they refuse, what every member is shown", arguments: Backend.allCases)
    func rolesFreezeAndSlowMode(backend: Backend) async throws {
        try await withGateway(backend) { gateway, _ in
            let alice = try await gateway.connect("alice")
            let mod = try await gateway.connect("mod")
            let bob = try await gateway.connect("bob")
            let id = try alice.createGroup(["mod", "bob"])
            _ = try bob.takeEvents("channel.updated")
            let created = try alice.ok("channel.get", ["channelId": id])
            #expect(created["roles"] as? [String: String] == ["alice": "owner"])
            #expect(created["frozen"] as? Bool == false && created["slowModeSeconds"] as? Int == 0 && created["muted"] as? Bool == false)

            #expect(try bob.errorCode("channel.setRole", ["channelId": id, "userId": "mod", "role": "moderator"]) == "ERR_FORBIDDEN")
            #expect(try alice.errorCode("channel.setRole", ["channelId": id, "userId": "mod", "role": "owner"]) == "ERR_BAD_REQUEST")
            let named = try alice.ok("channel.setRole", ["channelId": id, "userId": "mod", "role": "moderator"])
            #expect(named["roles"] as? [String: String] == ["alice": "owner", "mod": "moderator"])
            #expect((try bob.eventData("channel.updated")["roles"] as? [String: String])?["mod"] == "moderator")

            #expect(try bob.errorCode("channel.update", ["channelId": id, "frozen": true]) == "ERR_FORBIDDEN")
            #expect(try mod.errorCode("channel.update", ["channelId": id, "slowModeSeconds": 3601]) == "ERR_BAD_REQUEST")
            #expect(try mod.errorCode("channel.update", ["channelId": id, "slowModeSeconds": -1]) == "ERR_BAD_REQUEST")
            let frozen = try mod.ok("channel.update", ["channelId": id, "frozen": true])
            #expect(frozen["frozen"] as? Bool == true)
            _ = try bob.takeEvents("channel.updated")
            #expect(try bob.errorCode("message.send", ["channelId": id, "text": "hi"]) == "ERR_CHANNEL_FROZEN")
            _ = try mod.send(id, "moderators may speak")
            _ = try alice.send(id, "and owners")

            _ = try mod.ok("channel.update", ["channelId": id, "frozen": false, "slowModeSeconds": 30])
            _ = try bob.send(id, "first")
            let slow = try bob.request("message.send", ["channelId": id, "text": "second"])
            #expect((slow["error"] as? [String: Any])?["code"] as? String == "ERR_SLOW_MODE")
            #expect(((slow["error"] as? [String: Any])?["retryAfterMs"] as? Int ?? 0) > 0)
            _ = try mod.send(id, "moderators are not slowed")
            _ = try mod.send(id, "at all")
            gateway.clock.advance(by: 30_000)
            _ = try bob.send(id, "after the wait")
            // Bans are shown to owners and moderators only.
            #expect(try alice.ok("channel.get", ["channelId": id])["bans"] as? [String: Any] != nil)
            #expect(try bob.ok("channel.get", ["channelId": id])["bans"] == nil)
        }
    }

    @Test("channel.ban: the user is out and sees ERR_CHANNEL_NOT_FOUND, cannot be invited back; channel.unban lets it back", arguments: Backend.allCases)
    func plainBan(backend: Backend) async throws {
        try await withGateway(backend) { gateway, _ in
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            let carol = try await gateway.connect("carol")
            let id = try alice.createGroup(["bob", "carol"])
            _ = try carol.takeEvents("channel.updated")
            #expect(try bob.errorCode("channel.ban", ["channelId": id, "userId": "carol"]) == "ERR_FORBIDDEN")
            #expect(try alice.errorCode("channel.ban", ["channelId": id, "userId": "alice"]) == "ERR_FORBIDDEN")
            #expect(try alice.errorCode("channel.ban", ["channelId": id, "userId": "nobody"]) == "ERR_UID_NOT_FOUND")
            #expect(try alice.errorCode("channel.ban", ["channelId": id, "userId": "bob", "untilMs": -5]) == "ERR_BAD_REQUEST")
            #expect(try alice.ok("channel.ban", ["channelId": id, "userId": "bob"]).isEmpty)
            let updated = try carol.eventData("channel.updated")
            #expect(updated["members"] as? [String] == ["alice", "carol"])
            #expect(try bob.errorCode("message.send", ["channelId": id, "text": "hi"]) == "ERR_CHANNEL_NOT_FOUND")
            #expect(try bob.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
            #expect(try bob.errorCode("message.history", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
            #expect(try carol.errorCode("channel.invite", ["channelId": id, "userIds": ["bob"]]) == "ERR_FORBIDDEN")
            #expect((try alice.ok("channel.get", ["channelId": id])["bans"] as? [String: Any])?["bob"] != nil)
            #expect(try alice.ok("channel.unban", ["channelId": id, "userId": "bob"]).isEmpty)
            _ = try carol.ok("channel.invite", ["channelId": id, "userIds": ["bob"]])
            _ = try bob.send(id, "back")
        }
    }

    @Test("channel.ban shadow: ok as ever, the sender's other connection sees it, nobody else live or in history", arguments: Backend.allCases)
    func shadowBan(backend: Backend) async throws {
        try await withGateway(backend) { gateway, _ in
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob", query: "&device=a")
            let bobOther = try await gateway.connect("bob", query: "&device=b")
            let id = try alice.createGroup(["bob"])
            _ = try bob.takeEvents("channel.updated")
            _ = try bobOther.takeEvents("channel.updated")
            _ = try bob.send(id, "before")
            _ = try alice.takeEvents("message.new")
            _ = try bobOther.takeEvents("message.new")
            #expect(try alice.ok("channel.ban", ["channelId": id, "userId": "bob", "shadow": true]).isEmpty)
            #expect(try bob.expectNoEvent("channel.updated"), "nothing tells bob")
            let sent = try bob.send(id, "after")
            #expect(sent["seq"] as? Int == 2 && sent["text"] as? String == "after")
            #expect((try bobOther.eventData("message.new")["text"] as? String) == "after")
            #expect(try alice.expectNoEvent("message.new"))
            #expect(try alice.fullHistory(id).texts == ["before"])
            #expect(try bob.fullHistory(id).texts == ["before", "after"])
            #expect(try alice.ok("channel.get", ["channelId": id])["unreadCount"] as? Int == 1)
            #expect(try bob.ok("channel.get", ["channelId": id])["bans"] == nil, "never shown to its user")
        }
    }

    @Test("mutes: channel.mute shows muted to its member only; user.mute answers per id; no push from either", arguments: Backend.allCases)
    func mutes(backend: Backend) async throws {
        try await withGateway(backend) { gateway, push in
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            try await gateway.createUsers(["carol", "dave"])
            let id = try alice.createGroup(["bob", "carol", "dave"])
            _ = try bob.takeEvents("channel.updated")
            let muted = try alice.ok("channel.mute", ["channelId": id, "untilMs": Int(gateway.clock.now()) + 60_000])
            #expect(muted["muted"] as? Bool == true)
            #expect(try bob.expectNoEvent("channel.updated"))
            #expect(try bob.ok("channel.get", ["channelId": id])["muted"] as? Bool == false)
            let results = try alice.ok("user.mute", ["userIds": ["bob", "nobody", "alice"]])["results"] as? [String: String]
            #expect(results == ["bob": "success", "nobody": "ERR_UID_NOT_FOUND", "alice": "ERR_BAD_REQUEST"])
            #expect(try bob.errorCode("user.mute", ["userIds": []]) == "ERR_BAD_REQUEST")
            // carol muted bob; dave did not: only dave is pushed to.
            let carol = try await gateway.connect("carol")
            _ = try carol.ok("user.mute", ["userIds": ["bob"]])
            _ = try alice.ok("presence.subscribe", ["userIds": ["carol"]])
            carol.connection.dropConnection()
            #expect(try alice.eventData("user.presence")["online"] as? Bool == false, "carol is offline")
            let sent = try bob.send(id, "hello @carol", ["mentionedUserIds": ["carol", "dave"]])
            let messageID = try #require(sent["id"] as? String)
            #expect(try await push.waitForLine(user: "dave", messageID: messageID))
            #expect(push.lines(for: "carol", messageID: messageID).isEmpty, "a muter gets no push, mention or not")
            _ = try alice.ok("channel.unmute", ["channelId": id])
        }
    }

    @Test("user.unmute lifts a mute: per-id results as user.mute, and the unmuted user's messages push again", arguments: Backend.allCases)
    func unmute(backend: Backend) async throws {
        try await withGateway(backend) { gateway, push in
            let bob = try await gateway.connect("bob")
            try await gateway.createUsers(["carol"])
            let carol = try await gateway.connect("carol")
            let id = try bob.createGroup(["carol"])
            _ = try carol.ok("user.mute", ["userIds": ["bob"]])
            let results = try carol.ok("user.unmute", ["userIds": ["bob", "nobody", "carol"]])["results"] as? [String: String]
            #expect(results == ["bob": "success", "nobody": "ERR_UID_NOT_FOUND", "carol": "ERR_BAD_REQUEST"])
            #expect(try carol.errorCode("user.unmute", ["userIds": []]) == "ERR_BAD_REQUEST")
            // Unmuting a user who is not muted answers success and changes nothing.
            #expect(try carol.ok("user.unmute", ["userIds": ["bob"]])["results"] as? [String: String] == ["bob": "success"])
            _ = try bob.ok("presence.subscribe", ["userIds": ["carol"]])
            carol.connection.dropConnection()
            #expect(try bob.eventData("user.presence")["online"] as? Bool == false, "carol is offline")
            let sent = try bob.send(id, "pushed again")
            let messageID = try #require(sent["id"] as? String)
            #expect(try await push.waitForLine(user: "carol", messageID: messageID), "an unmuted user's message pushes")
        }
    }

    @Test("message.flag: refused for what the reporter cannot see; flags reach the admin API (paged) and the push sink", arguments: Backend.allCases)
    func flags(backend: Backend) async throws {
        try await withGateway(backend) { gateway, push in
            let alice = try await gateway.connect("alice")
            let bob = try await gateway.connect("bob")
            let id = try alice.createGroup(["bob"])
            for n in 0..<3 { _ = try bob.send(id, "spam \(n)") }
            #expect(try alice.ok("message.flag", ["channelId": id, "seq": 1, "reason": "spam"]).isEmpty)
            _ = try alice.ok("message.flag", ["channelId": id, "seq": 2])
            _ = try alice.ok("message.flag", ["channelId": id, "seq": 3, "reason": "again"])
            #expect(try alice.errorCode("message.flag", ["channelId": id, "seq": 9]) == "ERR_MESSAGE_NOT_FOUND")
            #expect(try alice.errorCode("message.flag", ["channelId": id, "seq": 1, "reason": String(repeating: "x", count: 501)])
                == "ERR_BAD_REQUEST")
            let first = try await gateway.admin("GET", "/v1/admin/flags?limit=2")
            #expect(first.status == 200, "\(first.body)")
            let page = first.json["flags"] as? [[String: Any]] ?? []
            #expect(page.map { $0["seq"] as? Int } == [1, 2])
            #expect(page.first?["reporterId"] as? String == "alice" && page.first?["senderId"] as? String == "bob")
            #expect(page.first?["reason"] as? String == "spam" && page.first?["messageId"] is String)
            let cursor = try #require(first.json["next"] as? String)
            let second = try await gateway.admin("GET", "/v1/admin/flags?limit=2&cursor=\(cursor)")
            #expect((second.json["flags"] as? [[String: Any]])?.map { $0["seq"] as? Int } == [3])
            #expect(second.json["next"] is NSNull)
            #expect(try await gateway.admin("GET", "/v1/admin/flags?cursor=forged").status == 400)
            let deadline = ContinuousClock.now.advanced(by: .seconds(2))
            while push.lines().filter({ $0["type"] as? String == "flag" }).count < 3 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            let sunk = push.lines().filter { $0["type"] as? String == "flag" }
            #expect(sunk.map { $0["seq"] as? Int } == [1, 2, 3])
            #expect(sunk.first?["channelId"] as? String == id && sunk.first?["createdAt"] is Int)
        }
    }

    @Test("admin API: an app-wide ban closes 4003 and refuses 403 until lifted; channel roles and bans", arguments: Backend.allCases)
    func adminModeration(backend: Backend) async throws {
        try await withGateway(backend) { gateway, _ in
            let alice = try await gateway.connect("alice")
            let henry = try await gateway.connect("henry")
            let id = try alice.createGroup(["henry"])
            let banned = try await gateway.admin("POST", "/v1/admin/users/henry/ban", body: [:])
            #expect(banned.status == 200, "\(banned.body)")
            #expect(try henry.connection.nextClose() == CloseCode.userBanned)
            let token = try await gateway.token(for: "henry")
            #expect(try await gateway.upgrade(path: "/v1/ws?token=\(token)").response.status == 403)
            #expect(try await gateway.admin("DELETE", "/v1/admin/users/henry/ban").status == 200)
            let back = try await gateway.connect("henry")
            _ = try back.send(id, "back")
            #expect(try await gateway.admin("POST", "/v1/admin/users/nobody/ban", body: [:]).status == 404)

            let role = try await gateway.admin("POST", "/v1/admin/channels/\(id)/roles", body: ["userId": "henry", "role": "owner"])
            #expect(role.status == 200, "\(role.body)")
            #expect((role.json["roles"] as? [String: String])?["henry"] == "owner")
            #expect(try await gateway.admin("POST", "/v1/admin/channels/\(id)/roles", body: ["userId": "henry", "role": "king"]).status == 400)
            let ban = try await gateway.admin("POST", "/v1/admin/channels/\(id)/bans", body: ["userId": "alice", "shadow": true])
            #expect(ban.status == 200, "\(ban.body)")
            _ = try alice.send(id, "unheard")
            #expect(try back.expectNoEvent("message.new"))
            #expect(try await gateway.admin("DELETE", "/v1/admin/channels/\(id)/bans/alice").status == 200)
            _ = try alice.send(id, "heard")
            #expect((try back.eventData("message.new")["text"] as? String) == "heard")
            let frozen = try await gateway.admin("POST", "/v1/admin/channels/\(id)", body: ["frozen": true])
            #expect(frozen.json["frozen"] as? Bool == true)
            // The backend deletes like an owner: any message, the members told.
            let tombstone = try await gateway.admin("DELETE", "/v1/admin/channels/\(id)/messages/1")
            #expect(tombstone.status == 200 && tombstone.json["deletedAt"] is Int, "\(tombstone.body)")
            #expect((try back.eventData("message.updated")["change"] as? String) == "delete")
            #expect(try await gateway.admin("DELETE", "/v1/admin/channels/\(id)/messages/99").status == 400)
            #expect(try await gateway.admin("DELETE", "/v1/admin/channels/\(id)/messages/x").status == 400)
        }
    }

    @Test("roles, bans, mutes and flags survive a restart (SQLite)")
    func restart() async throws {
        let dataDirectory = TestGateway.temporaryDirectory()
        var channel = ""
        do {
            let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
            let alice = try await gateway.connect("alice")
            try await gateway.createUsers(["bob", "carol", "dave"])
            channel = try alice.createGroup(["bob", "carol", "dave"])
            _ = try alice.ok("channel.setRole", ["channelId": channel, "userId": "carol", "role": "moderator"])
            _ = try alice.ok("channel.update", ["channelId": channel, "frozen": true, "slowModeSeconds": 20])
            _ = try alice.ok("channel.ban", ["channelId": channel, "userId": "bob", "shadow": true])
            _ = try alice.ok("channel.ban", ["channelId": channel, "userId": "dave", "untilMs": 4_102_444_800_000])
            _ = try alice.ok("channel.mute", ["channelId": channel])
            _ = try alice.ok("user.mute", ["userIds": ["bob"]])
            _ = try alice.send(channel, "flag me")
            _ = try alice.ok("message.flag", ["channelId": channel, "seq": 1, "reason": "test"])
        }
        let gateway = try await TestGateway.chat(dataDirectory: dataDirectory)
        let alice = try await gateway.connect("alice")
        let shown = try alice.ok("channel.get", ["channelId": channel])
        #expect(shown["roles"] as? [String: String] == ["alice": "owner", "carol": "moderator"])
        #expect(shown["frozen"] as? Bool == true && shown["slowModeSeconds"] as? Int == 20 && shown["muted"] as? Bool == true)
        let bans = shown["bans"] as? [String: [String: Any]] ?? [:]
        #expect(bans["bob"]?["shadow"] as? Bool == true && bans["dave"]?["untilMs"] as? Int == 4_102_444_800_000)
        #expect(shown["members"] as? [String] == ["alice", "bob", "carol"])
        let flags = try await gateway.admin("GET", "/v1/admin/flags")
        #expect((flags.json["flags"] as? [[String: Any]])?.count == 1)
        let bob = try await gateway.connect("bob")
        #expect(try bob.errorCode("message.send", ["channelId": channel, "text": "x"]) == "ERR_CHANNEL_FROZEN")
    }
}
