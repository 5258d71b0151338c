import Foundation
import Testing
@testable import ChatClient

/// Moderation (PROTOCOL.md §16) through the SDK against a live gateway: roles, freeze and
/// slow mode (and their send errors, which `retryRateLimited` does not wait out), plain and
/// shadow channel bans, mutes, flags listed by the admin API; an app-wide ban ending a live
/// client with its own refusal; the §16 channel fields as they come over the wire.
@Suite("ChatClient moderation", .serialized)
struct ChatClientModerationTests {
    /// The error a call failed with (nil: it did not fail).
    private static func error(_ call: () async throws -> some Any) async -> ChatClientError? {
        do {
            _ = try await call()
            return nil
        } catch let error as ChatClientError {
            return error
        } catch {
            return ChatClientError(.other("\(error)"), "\(error)")
        }
    }

    private static func code(_ call: () async throws -> some Any) async -> ChatClientError.Code? {
        await error(call)?.code
    }

    @Test func rolesFreezeAndSlowModeAnswerAsTheProtocolSays() async throws {
        let gateway = try await LiveGateway.start()
        let alice = gateway.client("alice")
        let bob = gateway.client("bob")
        let carol = gateway.client("carol") { $0.retryRateLimited = true }
        for client in [alice, bob, carol] { try await client.connect() }
        let created = try await alice.createChannel(userIDs: ["bob", "carol"], name: "moderated")
        #expect(created.roles == ["alice": .owner] && created.role(of: "bob") == .member)
        #expect(!created.frozen && created.slowModeSeconds == 0 && !created.muted)
        #expect(created.bans == [:], "an owner is shown the (empty) bans")
        #expect(try await bob.channel(created.id).bans == nil, "a member is not")
        let bobHears = StreamReader(await bob.events(in: created.id))

        // Only an owner names moderators; the owner's role is the backend's to give.
        #expect(await Self.code { try await bob.setRole(.moderator, for: "carol", in: created.id) } == .forbidden)
        #expect(await Self.code { try await alice.setRole(.owner, for: "bob", in: created.id) } == .badRequest)
        let named = try await alice.setRole(.moderator, for: "bob", in: created.id)
        #expect(named.roles == ["alice": .owner, "bob": .moderator] && named.role(of: "bob").moderates)
        let heard = await bobHears.first { if case .channelUpdated(let channel) = $0, channel.roles["bob"] != nil { channel } else { nil } }
        #expect(heard?.role(of: "bob") == .moderator)
        #expect(heard?.bans == [:], "a moderator is shown the bans too")

        // Freeze: a member may not, a moderator may; then only owners and moderators send.
        #expect(await Self.code { try await carol.updateChannel(created.id, frozen: true) } == .forbidden)
        #expect(try await bob.updateChannel(created.id, frozen: true).frozen)
        let frozen = await Self.error { try await carol.send("let me in", to: created.id) }
        #expect(frozen?.code == .channelFrozen && frozen?.retryAfterMs == nil)
        _ = try await bob.send("moderators still speak", to: created.id)
        #expect(try await alice.updateChannel(created.id, frozen: false).frozen == false)

        // Slow mode: one message per 30 s for members, refused at once even with retryRateLimited.
        #expect(await Self.code { try await alice.updateChannel(created.id, slowModeSeconds: 3601) } == .badRequest)
        #expect(try await alice.updateChannel(created.id, slowModeSeconds: 30).slowModeSeconds == 30)
        _ = try await carol.send("one", to: created.id)
        let started = ContinuousClock.now
        let slow = await Self.error { try await carol.send("two", to: created.id) }
        #expect(ContinuousClock.now - started < .seconds(5), "not waited out")
        #expect(slow?.code == .slowMode)
        #expect((1...30_000).contains(slow?.retryAfterMs ?? 0), "\(String(describing: slow))")
        _ = try await bob.send("moderators are not slowed", to: created.id)
        _ = try await bob.send("not at all", to: created.id)
        gateway.clock.advance(by: 30_000)
        _ = try await carol.send("two, later", to: created.id)
        let cleared = try await alice.updateChannel(created.id, slowModeSeconds: 0)
        #expect(cleared.slowModeSeconds == 0)
        _ = try await carol.send("three, at once", to: created.id)

        // Setting a member back.
        #expect(try await alice.setRole(.member, for: "bob", in: created.id).roles == ["alice": .owner])
        #expect(await Self.code { try await bob.updateChannel(created.id, frozen: true) } == .forbidden)
    }

    @Test func plainAndShadowBansMutesAndFlags() async throws {
        let gateway = try await LiveGateway.start()
        let alice = gateway.client("alice")
        let bob = gateway.client("bob")
        let carol = gateway.client("carol")
        for client in [alice, bob, carol] { try await client.connect() }
        let channel = try await alice.createChannel(userIDs: ["bob", "carol"], name: "bans")
        let said = try await alice.send("before any ban", to: channel.id)

        // Who may ban whom.
        #expect(await Self.code { try await bob.ban("carol", in: channel.id) } == .forbidden)
        #expect(await Self.code { try await alice.ban("alice", in: channel.id) } == .forbidden)
        _ = try await alice.setRole(.moderator, for: "bob", in: channel.id)
        #expect(await Self.code { try await bob.ban("alice", in: channel.id) } == .forbidden)
        _ = try await alice.setRole(.member, for: "bob", in: channel.id)

        // A shadow ban with an end: carol is answered as ever, nobody else gets her message.
        let until = Date(timeIntervalSince1970: Double(gateway.clock.now() + 3_600_000) / 1000)
        try await alice.ban("carol", in: channel.id, shadow: true, until: until)
        let ban = try #require(try await alice.channel(channel.id).bans?["carol"])
        #expect(ban.shadow && abs((ban.untilMs ?? 0) - gateway.clock.now() - 3_600_000) <= 1)
        let carolsView = try await carol.channel(channel.id)
        #expect(carolsView.bans == nil && carolsView.members.contains("carol"), "nothing tells her")
        let bobHears = StreamReader(await bob.events(in: channel.id))
        let hidden = try await carol.send("under the shadow", to: channel.id)
        #expect(hidden.seq > said.seq)
        #expect(try await carol.history(channel.id).items.map(\.seq).contains(hidden.seq), "her own history has it")
        for reader in [alice, bob] {
            #expect(try await reader.history(channel.id).items.map(\.seq) == [said.seq])
        }
        try await alice.unban("carol", in: channel.id)
        #expect(try await alice.channel(channel.id).bans == [:])
        let heard = try await carol.send("heard again", to: channel.id)
        let arrived = await bobHears.first { if case .message(let message) = $0 { message } else { nil } }
        #expect(arrived?.seq == heard.seq, "the first message bob gets is the one after the unban")

        // A plain ban takes carol out: the channel is not found for her until she is back.
        try await alice.ban("carol", in: channel.id)
        #expect(try await alice.channel(channel.id).members == ["alice", "bob"])
        #expect(await Self.code { try await carol.channel(channel.id) } == .channelNotFound)
        try await alice.unban("carol", in: channel.id)
        try await alice.unban("carol", in: channel.id)  // lifting none succeeds too
        #expect(await Self.code { try await carol.channel(channel.id) } == .channelNotFound, "not put back")
        #expect(try await alice.invite(["carol"], to: channel.id).members.contains("carol"))

        // Mutes are the muter's own.
        #expect(try await bob.muteChannel(channel.id).muted)
        #expect(try await alice.channel(channel.id).muted == false)
        #expect(try await bob.unmuteChannel(channel.id).muted == false)
        #expect(try await bob.muteChannel(channel.id, until: until).muted)
        let muted = try await bob.muteUsers(["alice", "nobody", "bob"])
        #expect(muted == ["alice": .success, "nobody": .failed(.uidNotFound), "bob": .failed(.badRequest)])
        #expect(try await bob.unmuteUsers(["alice"]) == ["alice": .success])

        // Flags: listed by the admin API; a message nobody can see, or a long reason, refused.
        try await carol.flagMessage(said.seq, in: channel.id, reason: "spam")
        #expect(await Self.code { try await carol.flagMessage(9999, in: channel.id) } == .messageNotFound)
        #expect(await Self.code { try await carol.flagMessage(said.seq, in: channel.id, reason: String(repeating: "x", count: 501)) }
            == .badRequest)
        let (status, body) = try await gateway.admin("GET", "/v1/admin/flags")
        let flags = body["flags"] as? [[String: Any]] ?? []
        #expect(status == 200 && flags.count == 1)
        #expect(flags.first?["reporterId"] as? String == "carol" && flags.first?["senderId"] as? String == "alice")
        #expect(flags.first?["seq"] as? Int == Int(said.seq) && flags.first?["reason"] as? String == "spam")
    }

    @Test func anAppWideBanEndsALiveClientWithItsOwnRefusal() async throws {
        let gateway = try await LiveGateway.start()
        let dave = gateway.client("dave")
        try await dave.connect()
        let events = StreamReader(await dave.events())
        #expect(try await gateway.admin("POST", "/v1/admin/users/dave/ban", [:]).0 == 200)
        let refusal = await events.first { if case .refused(let error) = $0 { error } else { nil } }
        #expect(refusal?.isBanned == true && refusal?.closeCode == 4003 && refusal?.status == 403)
        #expect(await events.first { $0 == .connection(.closed) ? true : nil } == true, "closed after the refusal")
        #expect(await dave.refusal == refusal)
        #expect(await dave.connectionState == .closed)
        #expect(await Self.code { try await dave.me() } == .closed)

        // Refused again at connect, as the upgrade would have been; admitted once the ban is lifted.
        let again = await Self.error { try await dave.connect() }
        #expect(again?.isBanned == true && again?.code == .handshakeRefused && !(again?.isDeactivated ?? true))
        #expect(try await gateway.admin("DELETE", "/v1/admin/users/dave/ban").0 == 200)
        try await dave.connect()
        #expect(await dave.refusal == nil)
        #expect(try await dave.me().user.id == "dave")
        await dave.disconnect()
    }
}

/// The §16 fields of `Channel` over the wire, and a gateway without them.
@Suite("Channel moderation model")
struct ChannelModerationModelTests {
    @Test func theModerationFieldsDecodeAndAnUnknownRoleIsLeftOut() throws {
        let channel = try JSONDecoder().decode(Channel.self, from: Data("""
            {"id":"c","type":"group","name":"","members":["a","b","c"],"memberCount":3,"distinct":false,"isOneToOne":false,
             "pushFromBlockedUsers":false,"createdAt":1,"lastMessage":null,"lastActivityAt":1,"lastReadSeq":0,"unreadCount":0,
             "version":4,"roles":{"a":"owner","b":"moderator","z":"janitor"},"frozen":true,"slowModeSeconds":30,"muted":true,
             "bans":{"d":{"shadow":true,"untilMs":1764280800000},"e":{"shadow":false,"untilMs":null}}}
            """.utf8))
        #expect(channel.roles == ["a": .owner, "b": .moderator])
        #expect(channel.role(of: "c") == .member && channel.role(of: "z") == .member)
        #expect(channel.frozen && channel.slowModeSeconds == 30 && channel.muted)
        #expect(channel.bans == ["d": ChannelBan(shadow: true, untilMs: 1_764_280_800_000), "e": ChannelBan(shadow: false)])
        #expect(channel.bans?["d"]?.until == Date(timeIntervalSince1970: 1_764_280_800))
    }

    @Test func aChannelWithoutModerationDecodesWithTheDefaults() throws {
        let channel = try JSONDecoder().decode(Channel.self, from: Data("""
            {"id":"c","type":"group","name":"","members":["a"],"memberCount":1,"distinct":false,"isOneToOne":false,
             "pushFromBlockedUsers":false,"createdAt":1,"lastMessage":null,"lastActivityAt":1,"lastReadSeq":0,"unreadCount":0,"version":2}
            """.utf8))
        #expect(channel.roles.isEmpty && !channel.frozen && channel.slowModeSeconds == 0 && !channel.muted && channel.bans == nil)
    }

    @Test func theTwoSendRefusalsHaveTheirCodes() {
        #expect(ChatClientError.Code(wire: "ERR_CHANNEL_FROZEN") == .channelFrozen)
        #expect(ChatClientError.Code(wire: "ERR_SLOW_MODE") == .slowMode)
    }
}
