import Foundation
import Testing
@testable import Gateway

/// PROTOCOL.md §4 channel requests.
@Suite("Channel requests")
struct ChannelRequestTests {
    @Test("channel.create group: creator + invitees, Channel shape, isOneToOne for two members")
    func createGroup() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let now = gateway.clock.now()
        let pair = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "name": "pair"])
        #expect(Shapes.keys(pair) == Shapes.channel, "\(pair.keys)")
        #expect((pair["id"] as? String)?.isEmpty == false)
        #expect(pair["type"] as? String == "group")
        #expect(pair["name"] as? String == "pair")
        #expect(pair["members"] as? [String] == ["alice", "bob"])
        #expect(pair["isOneToOne"] as? Bool == true)
        #expect(pair["distinct"] as? Bool == false)
        #expect(pair["pushFromBlockedUsers"] as? Bool == false)
        #expect(pair["createdAt"] as? Int == Int(now))
        #expect(pair["lastMessage"] is NSNull)
        #expect(pair["lastActivityAt"] as? Int == Int(now))
        let trio = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"]])
        #expect(Set(trio["members"] as? [String] ?? []) == ["alice", "bob", "carol"])
        #expect(trio["isOneToOne"] as? Bool == false)
        #expect(trio["id"] as? String != pair["id"] as? String)
        let solo = try alice.ok("channel.create", ["channelType": "group", "userIds": [String]()])
        #expect(solo["members"] as? [String] == ["alice"])
        #expect(solo["isOneToOne"] as? Bool == false)
    }

    @Test("distinct returns the existing channel of the same member set")
    func distinct() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let first = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "distinct": true])
        #expect(first["distinct"] as? Bool == true)
        let again = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "distinct": true])
        #expect(again["id"] as? String == first["id"] as? String)
        let fromBob = try bob.ok("channel.create", ["channelType": "group", "userIds": ["alice"], "distinct": true])
        #expect(fromBob["id"] as? String == first["id"] as? String)
        let other = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"], "distinct": true])
        #expect(other["id"] as? String != first["id"] as? String)
        let notDistinct = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])
        #expect(notDistinct["id"] as? String != first["id"] as? String)
        // Only one distinct alice+bob channel in alice's list.
        let list = try alice.ok("channel.list", ["limit": 100])
        let ids = (list["channels"] as? [[String: Any]] ?? []).ids
        #expect(ids.filter { $0 == first["id"] as? String }.count == 1)
        #expect(ids.count == 3)
    }

    @Test("an unknown invitee is ERR_UID_NOT_FOUND and nothing is created")
    func unknownInvitee() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob"])
        let alice = try await gateway.connect("alice")
        #expect(try alice.errorCode("channel.create", ["channelType": "group", "userIds": ["bob", "ghost"]]) == "ERR_UID_NOT_FOUND")
        #expect((try alice.ok("channel.list")["channels"] as? [Any])?.isEmpty == true)
    }

    @Test("open channel: join/leave; participants only while joined; non-participants can get but not send")
    func openChannel() async throws {
        let gateway = try await TestGateway.chat()
        let alice = try await gateway.connect("alice")
        let carol = try await gateway.connect("carol")
        let open = try alice.ok("channel.create", ["channelType": "open", "name": "lobby"])
        let id = try #require(open["id"] as? String)
        #expect(open["type"] as? String == "open")
        #expect(open["members"] as? [String] == ["alice"])
        let seen = try carol.ok("channel.get", ["channelId": id])
        #expect(seen["name"] as? String == "lobby")
        // An open channel lists no participant but the viewer; memberCount says how many there are.
        #expect(seen["members"] as? [String] == [] && seen["memberCount"] as? Int == 1)
        #expect(try carol.errorCode("message.send", ["channelId": id, "text": "hi"]) == "ERR_NOT_A_MEMBER")
        #expect(try carol.errorCode("message.history", ["channelId": id]) == "ERR_NOT_A_MEMBER")
        let joined = try carol.ok("channel.join", ["channelId": id])
        #expect(joined["members"] as? [String] == ["carol"] && joined["memberCount"] as? Int == 2)
        #expect(try carol.send(id, "hello lobby")["seq"] as? Int == 1)
        #expect((try carol.ok("channel.list")["channels"] as? [[String: Any]] ?? []).ids == [id])
        let left = try carol.ok("channel.leave", ["channelId": id])
        #expect(left.isEmpty)
        #expect(try alice.ok("channel.get", ["channelId": id])["members"] as? [String] == ["alice"])
        #expect(try carol.ok("channel.get", ["channelId": id])["members"] as? [String] == [])
        #expect(try alice.ok("channel.get", ["channelId": id])["memberCount"] as? Int == 1)
        #expect(try carol.errorCode("message.send", ["channelId": id, "text": "again"]) == "ERR_NOT_A_MEMBER")
        #expect((try carol.ok("channel.list")["channels"] as? [Any])?.isEmpty == true)
        // After leaving, carol no longer receives the channel's messages.
        try alice.send(id, "after carol left")
        #expect(try carol.takeEvents("message.new").isEmpty)
    }

    @Test("channel.get: a group non-member or an unknown id is ERR_CHANNEL_NOT_FOUND")
    func channelGet() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob"])
        let alice = try await gateway.connect("alice")
        let carol = try await gateway.connect("carol")
        let channel = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])
        let id = try #require(channel["id"] as? String)
        let got = try alice.ok("channel.get", ["channelId": id])
        #expect(Shapes.keys(got) == Shapes.channel)
        #expect(got["id"] as? String == id)
        #expect(try carol.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
        #expect(try alice.errorCode("channel.get", ["channelId": "c_does_not_exist"]) == "ERR_CHANNEL_NOT_FOUND")
    }

    @Test("channel.list: newest lastActivityAt first, paged with cursors")
    func channelList() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob", "carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        var ids: [String] = []
        for _ in 0..<4 {
            gateway.clock.advance(by: 1000)
            ids.append(try #require(try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])["id"] as? String))
        }
        // Not alice's: never listed.
        _ = try bob.ok("channel.create", ["channelType": "group", "userIds": ["carol"]])
        // Activity: ids[1] then ids[0] get messages; expected order: ids[0], ids[1], ids[3], ids[2].
        gateway.clock.advance(by: 1000)
        try bob.send(ids[1], "one")
        gateway.clock.advance(by: 1000)
        let last = try alice.send(ids[0], "zero")
        let expected = [ids[0], ids[1], ids[3], ids[2]]
        let all = try alice.ok("channel.list", ["limit": 100])
        let channels = try #require(all["channels"] as? [[String: Any]])
        #expect(channels.ids == expected)
        #expect(all["next"] is NSNull)
        let activity = channels.map { $0["lastActivityAt"] as? Int ?? 0 }
        #expect(activity == activity.sorted(by: >))
        #expect(Set(activity).count == 4)
        #expect((channels.first?["lastMessage"] as? [String: Any])?["id"] as? String == last["id"] as? String)
        #expect(channels.first?["lastActivityAt"] as? Int == last["createdAt"] as? Int)
        #expect(channels.last?["lastMessage"] is NSNull)
        // Pages of 3 and 1, then no cursor.
        var paged: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            var fields: [String: Any] = ["limit": 3]
            if let cursor { fields["cursor"] = cursor }
            let page = try alice.ok("channel.list", fields)
            paged += (page["channels"] as? [[String: Any]] ?? []).ids
            cursor = page["next"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 2)
        #expect(paged == expected)
        #expect(try alice.errorCode("channel.list", ["limit": 0]) == "ERR_INVALID_LIMIT")
        #expect(try alice.errorCode("channel.list", ["limit": 101]) == "ERR_INVALID_LIMIT")
        #expect(try alice.errorCode("channel.list", ["cursor": "Zm9v.AAAAAAAAAAA"]) == "ERR_INVALID_CURSOR")
    }

    @Test("channel.invite: members only; a third member turns a 1-to-1 channel into 1-to-N")
    func invite() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["carol", "dave"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let dave = try await gateway.connect("dave")
        let channel = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"]])
        let id = try #require(channel["id"] as? String)
        #expect(channel["isOneToOne"] as? Bool == true)
        // dave is not in it: cannot invite (PROTOCOL §11 says ERR_NOT_A_MEMBER; a group
        // a non-member cannot see may also answer ERR_CHANNEL_NOT_FOUND).
        let refused = try dave.errorCode("channel.invite", ["channelId": id, "userIds": ["dave"]])
        #expect(refused == "ERR_NOT_A_MEMBER" || refused == "ERR_CHANNEL_NOT_FOUND", "\(String(describing: refused))")
        #expect(try alice.ok("channel.get", ["channelId": id])["members"] as? [String] == ["alice", "bob"])
        #expect(try alice.errorCode("channel.invite", ["channelId": id, "userIds": ["ghost"]]) == "ERR_UID_NOT_FOUND")
        let grown = try bob.ok("channel.invite", ["channelId": id, "userIds": ["carol"]])
        #expect(grown["members"] as? [String] == ["alice", "bob", "carol"])
        #expect(grown["isOneToOne"] as? Bool == false)
        #expect(try alice.ok("channel.get", ["channelId": id])["isOneToOne"] as? Bool == false)
        // Inviting an existing member changes nothing.
        let same = try alice.ok("channel.invite", ["channelId": id, "userIds": ["bob"]])
        #expect(same["members"] as? [String] == ["alice", "bob", "carol"])
        // Once 1-to-N, it stays so even when back to two members.
        _ = try bob.ok("channel.leave", ["channelId": id])
        #expect(try alice.ok("channel.get", ["channelId": id])["isOneToOne"] as? Bool == false)
    }

    @Test("channel.update: name and pushFromBlockedUsers; non-members refused")
    func update() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["bob"])
        let alice = try await gateway.connect("alice")
        let carol = try await gateway.connect("carol")
        let channel = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob"], "name": "old"])
        let id = try #require(channel["id"] as? String)
        let renamed = try alice.ok("channel.update", ["channelId": id, "name": "new name"])
        #expect(Shapes.keys(renamed) == Shapes.channel)
        #expect(renamed["name"] as? String == "new name")
        #expect(renamed["pushFromBlockedUsers"] as? Bool == false)
        let pushed = try alice.ok("channel.update", ["channelId": id, "pushFromBlockedUsers": true])
        #expect(pushed["pushFromBlockedUsers"] as? Bool == true)
        #expect(pushed["name"] as? String == "new name")
        let got = try alice.ok("channel.get", ["channelId": id])
        #expect(got["name"] as? String == "new name")
        #expect(got["pushFromBlockedUsers"] as? Bool == true)
        let refused = try carol.errorCode("channel.update", ["channelId": id, "name": "hijack"])
        #expect(refused == "ERR_NOT_A_MEMBER" || refused == "ERR_CHANNEL_NOT_FOUND")
        #expect(try alice.ok("channel.get", ["channelId": id])["name"] as? String == "new name")
    }

    @Test("channel.leave: {} result; the leaver loses the channel, the others see it smaller")
    func leave() async throws {
        let gateway = try await TestGateway.chat()
        try await gateway.createUsers(["carol"])
        let alice = try await gateway.connect("alice")
        let bob = try await gateway.connect("bob")
        let channel = try alice.ok("channel.create", ["channelType": "group", "userIds": ["bob", "carol"]])
        let id = try #require(channel["id"] as? String)
        let left = try bob.ok("channel.leave", ["channelId": id])
        #expect(left.isEmpty)
        #expect(try alice.ok("channel.get", ["channelId": id])["members"] as? [String] == ["alice", "carol"])
        #expect(try bob.errorCode("channel.get", ["channelId": id]) == "ERR_CHANNEL_NOT_FOUND")
        #expect((try bob.ok("channel.list")["channels"] as? [Any])?.isEmpty == true)
        let send = try bob.errorCode("message.send", ["channelId": id, "text": "still here?"])
        #expect(send == "ERR_NOT_A_MEMBER" || send == "ERR_CHANNEL_NOT_FOUND")
        try alice.send(id, "bob is gone")
        #expect(try bob.takeEvents("message.new").isEmpty)
    }
}
