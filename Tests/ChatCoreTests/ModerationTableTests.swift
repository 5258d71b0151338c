import Testing
@testable import ChatCore

/// PROTOCOL.md §16 as engine decisions, against tables written from the protocol's text:
/// who may do what (backend, owner, moderator, member, banned, shadow-banned), what each
/// connection receives of a shadow-banned user (live, in history, in `message.changes`, in
/// counts, in push, typing and read events), how mute and block combine, and what a ban's end
/// does while its user is connected.
@Suite("Moderation table")
struct ModerationTableTests {
    // MARK: permissions

    static let actors: [ModerationPolicy.Actor] = [.backend, .member(.owner), .member(.moderator), .member(.member)]

    @Test("who may name roles, moderate and ban: backend anything; owners moderators and members; moderators members; members nothing")
    func permissions() {
        for actor in Self.actors {
            for target in ChannelRole.allCases {
                for role in ChannelRole.allCases {
                    let expected: Bool
                    switch actor {
                    case .backend: expected = true
                    case .member(.owner): expected = target != .owner && role != .owner
                    default: expected = false
                    }
                    #expect(ModerationPolicy.maySetRole(actor, target: target, to: role) == expected, "\(actor) \(target)→\(role)")
                }
                let mayBan: Bool
                switch actor {
                case .backend: mayBan = true
                case .member(.owner): mayBan = target != .owner
                case .member(.moderator): mayBan = target == .member
                case .member(.member): mayBan = false
                }
                #expect(ModerationPolicy.mayBan(actor, target: target) == mayBan, "\(actor) bans \(target)")
            }
            #expect(ModerationPolicy.mayModerate(actor) == (actor != .member(.member)), "\(actor) moderates")
        }
    }

    @Test("sending: frozen refuses members; slow mode spaces a member's sends; owners and moderators are never held")
    func sendRules() {
        let now: Milliseconds = 100_000
        for role in ChannelRole.allCases {
            for frozen in [false, true] {
                for (slow, last) in [(0, Milliseconds?.none), (10, nil), (10, now - 3_000), (10, now - 10_000)] {
                    let refusal = ModerationPolicy.sendRefusal(role: role, frozen: frozen, slowModeSeconds: slow, lastSentAt: last, now: now)
                    let label = "\(role) frozen=\(frozen) slow=\(slow) last=\(String(describing: last))"
                    if role != .member {
                        #expect(refusal == nil, "\(label)")
                    } else if frozen {
                        #expect(refusal?.code == .channelFrozen, "\(label)")
                    } else if last == now - 3_000 {
                        #expect(refusal?.code == .slowMode && refusal?.retryAfterMs == 7_000, "\(label)")
                    } else {
                        #expect(refusal == nil, "\(label)")
                    }
                }
            }
        }
    }

    /// A group of alice (owner), mod (moderator), bob and carol.
    static func group(settings: ChatEngine.Settings = ChatEngine.Settings()) -> (LifecycleWorld, ChannelID) {
        var world = LifecycleWorld(users: ["alice", "mod", "bob", "carol"], settings: settings)
        for user in ["alice", "mod", "bob", "carol"] { world.connect(user) }
        let channel = world.channel(.group, creator: "alice", members: ["mod", "bob", "carol"])
        world.moderate("alice", .setRole(channel, "mod", .moderator))
        return (world, channel)
    }

    @Test("in the engine: each request by each role answers as the permission table says")
    func requestsByRole() {
        for actor in ["alice", "mod", "bob"] {
            for target in ["alice", "mod", "carol"] where target != actor {
                var (world, channel) = Self.group()
                let actorRole = actor == "alice" ? ChannelRole.owner : actor == "mod" ? .moderator : .member
                let targetRole = target == "alice" ? ChannelRole.owner : target == "mod" ? .moderator : .member
                let ban = world.moderate(actor, .ban(channel, target, Ban()))
                let mayBan = ModerationPolicy.mayBan(.member(actorRole), target: targetRole)
                #expect(ban.code == (mayBan ? nil : .forbidden), "\(actor) bans \(target): \(ban)")
                #expect(world.engine.directory.channels[channel]?.members.contains(target) == !mayBan)
                let freeze = world.moderate(actor, .update(channel, name: nil, pushFromBlockedUsers: nil, frozen: true))
                #expect(freeze.code == (actorRole.moderates ? nil : .forbidden), "\(actor) freezes: \(freeze)")
                let role = world.moderate(actor, .setRole(channel, "carol", .moderator))
                #expect(role.code == (actorRole == .owner ? nil : .forbidden), "\(actor) names a moderator: \(role)")
            }
        }
    }

    @Test("a plain ban: the user is out, sees ERR_CHANNEL_NOT_FOUND for every request on it, cannot join or be invited until unbanned")
    func plainBan() {
        var (world, channel) = Self.group()
        #expect(world.moderate("mod", .ban(channel, "bob", Ban())).code == nil)
        #expect(world.send("bob", channel, "hi") == nil)
        #expect(world.replyError("bob") == .channelNotFound)
        _ = world.history("bob", channel)
        #expect(world.replyError("bob") == .channelNotFound)
        #expect(world.moderate("bob", .update(channel, name: "x", pushFromBlockedUsers: nil)).code == .channelNotFound)
        #expect(world.moderate("carol", .invite(channel, ["bob"])).code == .forbidden)
        #expect(world.moderate("mod", .unban(channel, "bob")).code == nil)
        #expect(world.moderate("carol", .invite(channel, ["bob"])).code == nil)
        #expect(world.send("bob", channel, "back") != nil)

        var open = Self.group()
        let openChannel = open.0.channel(.open, creator: "alice", members: ["bob", "carol"])
        #expect(open.0.moderate("alice", .ban(openChannel, "bob", Ban())).code == nil)
        #expect(open.0.moderate("bob", .join(openChannel)).code == .channelNotFound)
    }

    // MARK: shadow ban delivery

    struct ShadowCase: CustomStringConvertible {
        var kind: DeliveryPolicy.ChannelKind
        var mode: DeliveryPolicy.Mode
        /// The ban is the channel's (by its owner) or app-wide (by the backend).
        var appWide: Bool
        var description: String { "\(kind) \(mode) \(appWide ? "app-wide" : "channel")" }
    }

    static let shadowCases: [ShadowCase] = DeliveryPolicy.ChannelKind.allCases.flatMap { kind in
        DeliveryPolicy.Mode.allCases.flatMap { mode in [false, true].map { ShadowCase(kind: kind, mode: mode, appWide: $0) } }
    }

    /// alice (creator), bob (two connections: `bobOther` is the second) and, unless 1-to-1,
    /// carol; dave, a member of groups, is offline (push). alice's message is seq 1, bob's
    /// seq 2, before the ban; then bob is shadow-banned.
    static func shadowWorld(_ c: ShadowCase) -> (world: LifecycleWorld, channel: ChannelID, bobOther: SessionID, others: [UserID]) {
        var world = LifecycleWorld(users: ["alice", "bob", "carol", "dave"],
                                   settings: ChatEngine.Settings(blockingMode: c.mode, reactionEventWindowMilliseconds: 0))
        world.connect("bob")
        let bobOther = world.sessions["bob"] ?? 0
        for user in ["alice", "carol", "bob"] { world.connect(user) }
        let members: [UserID] = c.kind == .oneToOne ? ["bob"] : c.kind == .group ? ["bob", "carol", "dave"] : ["bob", "carol"]
        let channel = world.channel(c.kind == .open ? .open : .group, creator: "alice", members: members)
        world.send("alice", channel, "from alice")
        world.send("bob", channel, "from bob before")
        if c.appWide {
            world.run(world.engine.changeUser("bob", .ban(Ban(shadow: true)), for: .admin(1), now: world.now))
        } else {
            #expect(world.moderate("alice", .ban(channel, "bob", Ban(shadow: true))).code == nil)
        }
        world.clearEvents()
        return (world, channel, bobOther, c.kind == .oneToOne ? ["alice"] : ["alice", "carol"])
    }

    @Test("a shadow-banned user's messages, replies and mentions: acknowledged as ever, seen by its own connections only, live, in history, in changes, in counts and in push", arguments: shadowCases)
    func shadowMessages(_ c: ShadowCase) throws {
        var (world, channel, bobOther, others) = Self.shadowWorld(c)
        let sent = world.send("bob", channel, "unheard", mentions: ["alice"])
        let ok = try #require(sent)
        #expect(ok["seq"]?.int64Value == 3 && ok["text"]?.stringValue == "unheard", "an ordinary ok: \(ok)")
        #expect(world.send("bob", channel, "unheard reply", parentSeq: 1)?["parentSeq"]?.int64Value == 1)
        #expect(world.events(session: bobOther, "message.new").count == 2, "bob's other connection hears himself")
        #expect(world.events(session: bobOther, "message.updated").count == 1, "and his reply's count")
        for other in others {
            #expect(world.events(other, "message.new").isEmpty, "\(other) hears nothing live")
            #expect(world.events(other, "message.updated").isEmpty, "\(other) sees no reply count move")
            let history = world.history(other, channel)
            #expect(history.compactMap { $0["text"]?.stringValue } == ["from alice", "from bob before"], "\(other): \(history)")
            #expect(history.first?["replyCount"]?.int64Value == 0)
            #expect(world.changes(other, channel, after: 0).count == 2)
            #expect(world.unread(other, channel) == (other == "alice" ? 1 : 2), "\(other)'s unread count is unmoved")
        }
        let own = world.history("bob", channel)
        #expect(own.compactMap { $0["text"]?.stringValue } == ["from alice", "from bob before", "unheard", "unheard reply"])
        #expect(own.first?["replyCount"]?.int64Value == 1)
        #expect(world.pushes.filter { $0.message.senderID == "bob" && $0.message.text != "from bob before" }.isEmpty,
                "no push, mention or not")
        // The 1-to-1's other member's list still shows what it showed.
        #expect(world.lastMessageText("alice", channel) == "from bob before")
        #expect(world.lastMessageText("bob", channel) == "unheard reply")
    }

    @Test("a shadow-banned user's reactions, edits, typing and read marks reach its own connections only", arguments: shadowCases)
    func shadowDoings(_ c: ShadowCase) throws {
        var (world, channel, bobOther, others) = Self.shadowWorld(c)
        #expect(world.change("bob", channel, 1, .addReaction("like")).map(Self.isResult) == true)
        #expect(world.events(session: bobOther, "reaction.added").first?["reactions"]?["like"]?.int64Value == 1)
        #expect(world.change("bob", channel, 2, .edit(MessageEdit(text: "edited under the ban"))).map(Self.isResult) == true)
        #expect(world.events(session: bobOther, "message.updated").count == 1)
        world.run(world.engine.typingStart(channel, from: "bob", session: world.sessions["bob"], for: world.requester("bob"),
                                           monotonicNow: world.now))
        #expect(world.events(session: bobOther, "typing.start").count == 1)
        world.run(world.engine.markRead(channel, seq: 2, by: "bob", session: world.sessions["bob"], for: world.requester("bob")))
        for other in others {
            #expect(world.events(other, "reaction.added").isEmpty, "\(other)")
            #expect(world.events(other, "message.updated").isEmpty, "\(other)")
            #expect(world.events(other, "typing.start").isEmpty, "\(other)")
            #expect(world.events(other, "channel.read").isEmpty, "\(other)")
            let history = world.history(other, channel)
            #expect(history.first?["reactions"]?["like"] == nil, "\(other) counts no reaction of bob: \(history)")
            #expect(!history.contains { $0["text"]?.stringValue == "edited under the ban" }, "\(other) never sees the edit")
        }
        let own = world.history("bob", channel)
        #expect(own.first?["reactions"]?["like"]?.int64Value == 1)
        #expect(own.last?["text"]?.stringValue == "edited under the ban")
    }

    @Test("after the shadow ban is lifted: new messages reach everyone; what was said under it stays with its sender", arguments: shadowCases)
    func shadowLifted(_ c: ShadowCase) {
        var (world, channel, _, others) = Self.shadowWorld(c)
        world.send("bob", channel, "unheard")
        if c.appWide {
            world.run(world.engine.changeUser("bob", .ban(nil), for: .admin(2), now: world.now))
        } else {
            #expect(world.moderate("alice", .unban(channel, "bob")).code == nil)
        }
        world.clearEvents()
        world.send("bob", channel, "heard again")
        for other in others {
            #expect(world.events(other, "message.new").compactMap { $0["text"]?.stringValue } == ["heard again"], "\(other)")
            #expect(world.history(other, channel).compactMap { $0["text"]?.stringValue } == ["from alice", "from bob before", "heard again"])
        }
    }

    @Test("a shadow ban that ends lifts itself while its user is connected")
    func shadowBanEnds() {
        var (world, channel) = Self.group()
        #expect(world.moderate("mod", .ban(channel, "bob", Ban(shadow: true, untilMs: world.now + 5_000))).code == nil)
        #expect(world.engine.banDue(channel: channel, user: "bob", now: world.now + 1_000).allSatisfy {
            if case .checkBanLater = $0 { return true } else { return false }
        }, "not yet over: looked at again later")
        world.now += 5_000
        world.run(world.engine.banDue(channel: channel, user: "bob", now: world.now))
        #expect(world.engine.directory.channels[channel]?.bans["bob"] == nil)
        world.clearEvents()
        world.send("bob", channel, "heard")
        #expect(world.events("carol", "message.new").count == 1)
    }

    // MARK: mutes

    @Test("a channel mute that ends lifts itself: muted false again, pushes again")
    func channelMuteEnds() throws {
        var world = LifecycleWorld(users: ["alice", "bob"], settings: ChatEngine.Settings())
        world.connect("alice")
        world.connect("bob")
        let channel = world.channel(.group, creator: "alice", members: ["bob"])
        let until = world.now + 5_000
        #expect(world.moderate("alice", .mute(channel, ChannelMute(untilMs: until))).code == nil)
        #expect(world.engine.banDue(channel: channel, user: "alice", now: until - 1).allSatisfy {
            if case .checkBanLater = $0 { return true } else { return false }
        }, "not yet over: looked at again later")
        world.now = until
        world.run(world.engine.banDue(channel: channel, user: "alice", now: world.now))
        #expect(world.engine.directory.channels[channel]?.mutes["alice"] == nil)
        let lifted = try #require(world.engine.directory.channels[channel])
        let shown = parseJSON(world.engine.encode(lifted, for: "alice"))
        #expect(shown?["muted"] == .bool(false))
    }

    @Test("mute × block: a muted user or channel delivers and counts, never pushes, mention or not; a muted user's typing skips its muter",
          arguments: DeliveryPolicy.Mode.allCases)
    func mutes(_ mode: DeliveryPolicy.Mode) {
        for mute in ["none", "user", "channel"] {
            for aBlockedB in [false, true] {
                var world = LifecycleWorld(users: ["alice", "bob", "carol"], settings: ChatEngine.Settings(blockingMode: mode))
                for user in ["alice", "bob", "carol"] { world.connect(user) }
                let channel = world.channel(.group, creator: "bob", members: ["alice", "carol"])
                if aBlockedB { world.block("alice", "bob") }
                if mute == "user" { world.run(world.engine.muteUsers(["bob"], muted: true, by: "alice", for: world.requester("alice"), now: world.now)) }
                if mute == "channel" { #expect(world.moderate("alice", .mute(channel, ChannelMute())).code == nil) }
                let label = "\(mode) mute=\(mute) aBlockedB=\(aBlockedB)"
                world.clearEvents()
                world.run(world.engine.typingStart(channel, from: "bob", session: world.sessions["bob"], for: world.requester("bob"),
                                                   monotonicNow: world.now))
                // A block stops typing where it stops messages (§14); a user mute always does.
                let typingExpected = mute != "user" && (!aBlockedB || mode == .standard)
                #expect(world.events("alice", "typing.start").count == (typingExpected ? 1 : 0), "\(label)")
                // alice goes offline: push decides.
                world.run(world.engine.closeSession(world.sessions["alice"] ?? 0, now: world.now))
                world.send("bob", channel, "hello", mentions: ["alice"])
                let blockAllowsPush = DeliveryPolicy.pushes(kind: .group, mode: mode,
                                                            relation: .init(recipientBlockedSender: aBlockedB, senderBlockedRecipient: false),
                                                            pushFromBlockedUsers: false)
                let pushed = world.pushes.contains { $0.userID == "alice" }
                #expect(pushed == (blockAllowsPush && mute == "none"), "\(label)")
                #expect(world.pushes.contains { $0.userID == "carol" } == false, "carol is online")
                let counted = world.engine.directory.readState(of: channel, for: "alice").unreadCount
                #expect(counted == (mode == .strict && aBlockedB ? 0 : 1), "\(label): a mute still counts as unread")
            }
        }
    }

    @Test("user.mute answers per id like user.block; a mute is never shown to the muted user")
    func muteResults() throws {
        var world = LifecycleWorld(users: ["alice", "bob"], settings: ChatEngine.Settings())
        world.connect("alice")
        world.connect("bob")
        world.run(world.engine.muteUsers(["bob", "alice", "nobody"], muted: true, by: "alice", for: world.requester("alice"), now: world.now))
        guard case .blockResults(let results)? = world.replies[world.sessions["alice"] ?? 0] else {
            Issue.record("no results")
            return
        }
        #expect(results == ["bob": "success", "alice": "ERR_BAD_REQUEST", "nobody": "ERR_UID_NOT_FOUND"])
        #expect(world.engine.directory.users["alice"]?.mutedUsers == ["bob"])
        let bobSees = try #require(parseJSON(try world.engine.user("alice", seenBy: "bob")))
        #expect(!String(describing: bobSees).contains("mute"))
    }

    // MARK: flags

    @Test("message.flag: anyone who sees the message; the flag goes to the sink; a message hidden from the reporter is not found")
    func flags() {
        var world = LifecycleWorld(users: ["alice", "bob"], settings: ChatEngine.Settings(blockingMode: .standard))
        world.connect("alice")
        world.connect("bob")
        let channel = world.channel(.group, creator: "alice", members: ["bob"])
        world.send("bob", channel, "spam")
        #expect(world.change("alice", channel, 1, .flag(reason: "spam")).map(Self.isResult) == true)
        #expect(world.flags.map { [$0.reporterID, $0.senderID, $0.reason, $0.messageID.isEmpty ? "" : "id"] } == [["alice", "bob", "spam", "id"]])
        world.block("alice", "bob")
        world.send("bob", channel, "hidden from alice")
        #expect(world.change("alice", channel, 2, .flag(reason: "")).map(Self.error) == .messageNotFound)
        #expect(world.change("alice", channel, 9, .flag(reason: "")).map(Self.error) == .messageNotFound)
    }

    static func isResult(_ reply: EngineReply) -> Bool {
        if case .result = reply { return true }
        return false
    }

    static func error(_ reply: EngineReply) -> ErrorCode? {
        if case .failure(let error) = reply { return error.code }
        return nil
    }
}

extension LifecycleWorld {
    /// A channel request by `user` (or the backend, ""), answered.
    @discardableResult
    mutating func moderate(_ user: UserID, _ command: ChannelCommand) -> (code: ErrorCode?, reply: EngineReply?) {
        now += 1
        let requester: Requester = user.isEmpty ? .admin(9) : requester(user)
        replies[sessions[user] ?? 0] = nil
        run(engine.changeChannel(command, by: user, for: requester, now: now))
        let reply = replies[sessions[user] ?? 0]
        if case .failure(let error)? = reply { return (error.code, reply) }
        return (nil, reply)
    }

    func replyError(_ user: UserID) -> ErrorCode? {
        if case .failure(let error)? = replies[sessions[user] ?? 0] { return error.code }
        return nil
    }

    func unread(_ user: UserID, _ channel: ChannelID) -> Int64 {
        engine.directory.readState(of: channel, for: user).unreadCount
    }

    func lastMessageText(_ user: UserID, _ channel: ChannelID) -> String? {
        engine.directory.lastMessage(of: channel, for: user)?.text
    }
}
