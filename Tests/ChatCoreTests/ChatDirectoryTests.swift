import Testing
@testable import ChatCore

struct ChatDirectoryTests {
    /// A directory with users a…e (and "f" with metadata), created at time 0.
    static func directory() -> ChatDirectory {
        var d = ChatDirectory()
        d.upsert(User(id: "a", name: "Alice", metadata: ["team": "red"], createdAt: 0))
        d.upsert(User(id: "b", name: "Bob", metadata: ["team": "blue"], createdAt: 0))
        d.upsert(User(id: "c", name: "Carol", metadata: ["team": "red", "role": "admin"], createdAt: 0))
        d.upsert(User(id: "d", name: "Dan", createdAt: 0))
        d.upsert(User(id: "e", name: "Eve", metadata: ["team": "green"], createdAt: 0))
        return d
    }

    static func message(_ id: String, in channel: ChannelID, from sender: UserID, at time: Milliseconds,
                        seq: Int64 = 0, hiddenFrom: UserID? = nil) -> Message {
        Message(id: id, channelID: channel, seq: seq, senderID: sender, text: id, createdAt: time, hiddenFrom: hiddenFrom)
    }

    // MARK: users

    @Test("user(_:) finds users; unknown → ERR_UID_NOT_FOUND; upsert replaces")
    func users() throws {
        var d = Self.directory()
        #expect(try d.user("a").name == "Alice")
        #expect(errorCode { try d.user("zz") } == .userNotFound)
        d.upsert(User(id: "a", name: "Alicia", createdAt: 0))
        #expect(try d.user("a").name == "Alicia")
        #expect(d.users.count == 5)
    }

    // MARK: createGroup

    @Test("createGroup dedupes members, keeps creator first and join order")
    func createGroupDedupes() throws {
        var d = Self.directory()
        let (channel, created) = try d.createGroup(id: "g1", creator: "a", members: ["a", "b", "a", "c", "b"], name: "n",
                                                   distinct: false, pushFromBlockedUsers: true, now: 5)
        #expect(created)
        #expect(channel.members == ["a", "b", "c"])
        #expect(channel.type == .group)
        #expect(channel.name == "n")
        #expect(channel.pushFromBlockedUsers)
        #expect(channel.createdAt == 5)
        #expect(channel.createdBy == "a")
        #expect(!channel.isOneToOne)
        #expect(d.channels["g1"] == channel)
        for user in ["a", "b", "c"] { #expect(d.channelIDs(of: user) == ["g1"]) }
        #expect(d.channelIDs(of: "d").isEmpty)
    }

    @Test("createGroup with an unknown member → ERR_UID_NOT_FOUND and nothing is created")
    func createGroupUnknownMember() {
        var d = Self.directory()
        #expect(errorCode {
            try d.createGroup(id: "g1", creator: "a", members: ["a", "zz"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        } == .userNotFound)
        #expect(d.channels.isEmpty)
        #expect(d.channelIDs(of: "a").isEmpty)
    }

    @Test("exactly two distinct members make a 1-to-1; one or three do not")
    func oneToOne() throws {
        var d = Self.directory()
        #expect(try d.createGroup(id: "g2", creator: "a", members: ["a", "b"], name: "", distinct: false,
                                  pushFromBlockedUsers: false, now: 0).channel.isOneToOne)
        #expect(try d.createGroup(id: "g2b", creator: "a", members: ["a", "b", "b", "a"], name: "", distinct: false,
                                  pushFromBlockedUsers: false, now: 0).channel.isOneToOne)
        #expect(try !d.createGroup(id: "g1", creator: "a", members: ["a"], name: "", distinct: false,
                                   pushFromBlockedUsers: false, now: 0).channel.isOneToOne)
        #expect(try !d.createGroup(id: "g3", creator: "a", members: ["a", "b", "c"], name: "", distinct: false,
                                   pushFromBlockedUsers: false, now: 0).channel.isOneToOne)
        #expect(try d.createGroup(id: "g4", creator: "a", members: ["a", "b"], name: "", distinct: false,
                                  pushFromBlockedUsers: false, now: 0).channel.kind == .oneToOne)
    }

    @Test("distinct: the same member set in any order returns the existing channel")
    func distinct() throws {
        var d = Self.directory()
        let first = try d.createGroup(id: "g1", creator: "a", members: ["a", "b", "c"], name: "x", distinct: true,
                                      pushFromBlockedUsers: false, now: 1)
        #expect(first.created)
        let again = try d.createGroup(id: "g2", creator: "c", members: ["c", "a", "b", "a"], name: "y", distinct: true,
                                      pushFromBlockedUsers: true, now: 2)
        #expect(!again.created)
        #expect(again.channel == first.channel)
        #expect(d.channels["g2"] == nil)
        // A different set, or a non-distinct request, makes a new channel.
        #expect(try d.createGroup(id: "g3", creator: "a", members: ["a", "b"], name: "", distinct: true,
                                  pushFromBlockedUsers: false, now: 3).created)
        #expect(try d.createGroup(id: "g4", creator: "a", members: ["b", "a", "c"], name: "", distinct: false,
                                  pushFromBlockedUsers: false, now: 4).created)
        #expect(try d.createGroup(id: "g5", creator: "b", members: ["b", "a"], name: "", distinct: true,
                                  pushFromBlockedUsers: false, now: 5).channel.id == "g3")
    }

    @Test("a distinct channel whose members changed is no longer found by its old member set")
    func distinctAfterInvite() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g1", creator: "a", members: ["a", "b"], name: "", distinct: true,
                              pushFromBlockedUsers: false, now: 1)
        _ = try d.invite("g1", by: "a", users: ["c"])
        let fresh = try d.createGroup(id: "g2", creator: "a", members: ["a", "b"], name: "", distinct: true,
                                      pushFromBlockedUsers: false, now: 2)
        #expect(fresh.created)
        #expect(fresh.channel.id == "g2")
        #expect(fresh.channel.isOneToOne)
    }

    // MARK: invite

    @Test("invite: adds new members only; unknown invitee → ERR_UID_NOT_FOUND")
    func invite() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b", "c"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        let (channel, added, _) = try d.invite("g", by: "b", users: ["c", "d", "d", "e"])
        #expect(added == ["d", "e"])
        #expect(channel.members == ["a", "b", "c", "d", "e"])
        #expect(d.channelIDs(of: "e") == ["g"])
        #expect(try d.invite("g", by: "a", users: ["b"]).added.isEmpty)
        #expect(errorCode { try d.invite("g", by: "a", users: ["zz"]) } == .userNotFound)
        #expect(d.channels["g"]?.members == ["a", "b", "c", "d", "e"])
    }

    @Test("invite: non-member → ERR_CHANNEL_NOT_FOUND, unknown channel → ERR_CHANNEL_NOT_FOUND, open channel refused")
    func inviteRefused() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        #expect(errorCode { try d.invite("g", by: "c", users: ["c"]) } == .channelNotFound)
        #expect(errorCode { try d.invite("nope", by: "a", users: ["c"]) } == .channelNotFound)
        _ = d.createOpen(id: "o", creator: "a", name: "lobby", pushFromBlockedUsers: false, now: 0)
        #expect(errorCode { try d.invite("o", by: "a", users: ["b"]) } != nil)
        #expect(d.channels["o"]?.members == ["a"])
    }

    @Test("a third member ends 1-to-1 for good, even after someone leaves")
    func thirdMemberEndsOneToOne() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        #expect(d.channels["g"]?.isOneToOne == true)
        let invited = try d.invite("g", by: "a", users: ["c"])
        #expect(!invited.channel.isOneToOne)
        let left = try d.leave("g", user: "c")
        #expect(left.members == ["a", "b"])
        #expect(!left.isOneToOne)
        #expect(d.channels["g"]?.isOneToOne == false)
        #expect(d.channels["g"]?.kind == .group)
    }

    /// PROTOCOL §5: "Once anyone else joins, the 1-to-N rules apply from then on";
    /// Models.swift: "created with exactly two members that nobody else ever joined".
    @Test("a 1-to-1 whose member left stops being 1-to-1 when someone else is invited")
    func someoneElseJoinsAfterLeave() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        _ = try d.leave("g", user: "b")
        let (channel, added, _) = try d.invite("g", by: "a", users: ["c"])
        #expect(added == ["c"])
        #expect(channel.members == ["a", "c"])
        #expect(!channel.isOneToOne, "c is someone else: 1-to-N rules apply from then on")
    }

    @Test("a group created with one member does not become 1-to-1 when a second is invited")
    func growingSoloGroup() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        #expect(try !d.invite("g", by: "a", users: ["b"]).channel.isOneToOne)
    }

    // MARK: open channels

    @Test("open channels: creator participates, anyone joins (idempotent) and leaves")
    func openJoinLeave() throws {
        var d = Self.directory()
        let open = d.createOpen(id: "o", creator: "a", name: "lobby", pushFromBlockedUsers: true, now: 3)
        #expect(open.type == .open)
        #expect(open.members == ["a"])
        #expect(!open.isOneToOne)
        #expect(!open.distinct)
        #expect(open.kind == .open)
        #expect(try d.join("o", user: "b").members == ["a", "b"])
        #expect(try d.join("o", user: "b").members == ["a", "b"])
        #expect(d.channelIDs(of: "b") == ["o"])
        #expect(try d.leave("o", user: "a").members == ["b"])
        #expect(d.channelIDs(of: "a").isEmpty)
        #expect(errorCode { try d.leave("o", user: "a") } == .notAMember)
        #expect(try d.visibleChannel("o", to: "a").id == "o")
        #expect(try d.join("o", user: "a").members == ["b", "a"])
    }

    @Test("an open channel without a creator (admin API) starts empty")
    func openWithoutCreator() throws {
        var d = Self.directory()
        let open = d.createOpen(id: "o", creator: nil, name: "", pushFromBlockedUsers: false, now: 0)
        #expect(open.members.isEmpty)
        #expect(try d.join("o", user: "c").members == ["c"])
    }

    @Test("join: a group is not joinable; non-members do not even see it")
    func joinGroup() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        #expect(errorCode { try d.join("g", user: "c") } == .channelNotFound)
        #expect(errorCode { try d.join("g", user: "a") } != nil)
        #expect(errorCode { try d.join("nope", user: "a") } == .channelNotFound)
        #expect(d.channels["g"]?.members == ["a", "b"])
    }

    @Test("leave a group: member removed; non-member → ERR_CHANNEL_NOT_FOUND")
    func leaveGroup() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b", "c"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        #expect(try d.leave("g", user: "b").members == ["a", "c"])
        #expect(d.channelIDs(of: "b").isEmpty)
        #expect(errorCode { try d.leave("g", user: "b") } == .channelNotFound)
        #expect(errorCode { try d.visibleChannel("g", to: "b") } == .channelNotFound)
    }

    // MARK: visibility

    @Test("visibility: groups to members only, open channels to everyone")
    func visibility() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        _ = d.createOpen(id: "o", creator: "a", name: "", pushFromBlockedUsers: false, now: 0)
        #expect(try d.visibleChannel("g", to: "a").id == "g")
        #expect(try d.memberChannel("g", of: "b").id == "g")
        #expect(errorCode { try d.visibleChannel("g", to: "c") } == .channelNotFound)
        #expect(errorCode { try d.memberChannel("g", of: "c") } == .channelNotFound)
        #expect(errorCode { try d.visibleChannel("missing", to: "a") } == .channelNotFound)
        #expect(errorCode { try d.memberChannel("missing", of: "a") } == .channelNotFound)
        for user in ["a", "b", "c", "not-a-user"] { #expect(try d.visibleChannel("o", to: user).id == "o") }
        #expect(try d.memberChannel("o", of: "a").id == "o")
        #expect(errorCode { try d.memberChannel("o", of: "c") } == .notAMember)
    }

    @Test("update: members rename and toggle pushFromBlockedUsers; others cannot")
    func update() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "old", distinct: false,
                              pushFromBlockedUsers: false, now: 0)
        let renamed = try d.update("g", by: "b", name: "new", pushFromBlockedUsers: nil)
        #expect(renamed.name == "new")
        #expect(!renamed.pushFromBlockedUsers)
        let toggled = try d.update("g", by: "a", name: nil, pushFromBlockedUsers: true)
        #expect(toggled.name == "new")
        #expect(toggled.pushFromBlockedUsers)
        #expect(d.channels["g"]?.pushFromBlockedUsers == true)
        #expect(errorCode { try d.update("g", by: "c", name: "x", pushFromBlockedUsers: nil) } == .channelNotFound)
        _ = d.createOpen(id: "o", creator: "a", name: "", pushFromBlockedUsers: false, now: 0)
        #expect(errorCode { try d.update("o", by: "c", name: "x", pushFromBlockedUsers: nil) } == .notAMember)
        #expect(d.channels["g"]?.name == "new")
    }

    // MARK: record / lastMessage

    @Test("record: everyone sees the newest message; lastActivity follows it")
    func recordPlain() throws {
        var d = Self.directory()
        let channel = try d.createGroup(id: "g", creator: "a", members: ["a", "b", "c"], name: "", distinct: false,
                                        pushFromBlockedUsers: false, now: 100).channel
        #expect(d.lastMessage(of: "g", for: "a") == nil)
        #expect(d.lastActivity(of: channel, for: "a") == 100)
        let m1 = Self.message("m1", in: "g", from: "a", at: 200, seq: 1)
        let m2 = Self.message("m2", in: "g", from: "b", at: 300, seq: 2)
        d.record(m1)
        d.record(m2)
        for viewer in ["a", "b", "c"] {
            #expect(d.lastMessage(of: "g", for: viewer) == m2)
            #expect(d.lastActivity(of: channel, for: viewer) == 300)
        }
    }

    @Test("hiddenFrom: the hidden viewer keeps seeing the previous visible message; others see the newest")
    func hiddenFrom() throws {
        var d = Self.directory()
        let channel = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                                        pushFromBlockedUsers: false, now: 100).channel
        let m1 = Self.message("m1", in: "g", from: "a", at: 200, seq: 1)
        d.record(m1)
        // a blocked b: b's messages are hidden from a.
        let m2 = Self.message("m2", in: "g", from: "b", at: 300, seq: 2, hiddenFrom: "a")
        let m3 = Self.message("m3", in: "g", from: "b", at: 400, seq: 3, hiddenFrom: "a")
        d.record(m2)
        #expect(d.lastMessage(of: "g", for: "a") == m1)
        #expect(d.lastMessage(of: "g", for: "b") == m2, "the sender is not told: its own message is its last")
        d.record(m3)
        #expect(d.lastMessage(of: "g", for: "a") == m1)
        #expect(d.lastMessage(of: "g", for: "b") == m3)
        #expect(d.lastActivity(of: channel, for: "a") == 200)
        #expect(d.lastActivity(of: channel, for: "b") == 400)
        // A visible message (a writes, or after unblock) is everyone's newest again.
        let m4 = Self.message("m4", in: "g", from: "a", at: 500, seq: 4)
        d.record(m4)
        #expect(d.lastMessage(of: "g", for: "a") == m4)
        #expect(d.lastMessage(of: "g", for: "b") == m4)
        // Hidden again afterwards: a falls back to m4, not to the older m1.
        let m5 = Self.message("m5", in: "g", from: "b", at: 600, seq: 5, hiddenFrom: "a")
        d.record(m5)
        #expect(d.lastMessage(of: "g", for: "a") == m4)
        #expect(d.lastMessage(of: "g", for: "b") == m5)
    }

    @Test("hiddenFrom on the very first message: the hidden viewer sees no last message")
    func hiddenFirstMessage() throws {
        var d = Self.directory()
        let channel = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                                        pushFromBlockedUsers: false, now: 100).channel
        d.record(Self.message("m1", in: "g", from: "b", at: 200, seq: 1, hiddenFrom: "a"))
        d.record(Self.message("m2", in: "g", from: "b", at: 300, seq: 2, hiddenFrom: "a"))
        #expect(d.lastMessage(of: "g", for: "a") == nil)
        #expect(d.lastActivity(of: channel, for: "a") == 100)
        #expect(d.lastMessage(of: "g", for: "b")?.id == "m2")
    }

    /// Both members blocked each other: each one's messages are hidden from the other.
    /// a's own message m3 is visible to a, so a's last message must be m3, not m1.
    @Test("mutual block: each viewer's last visible message is its own newest")
    func mutualBlock() throws {
        var d = Self.directory()
        let channel = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "", distinct: false,
                                        pushFromBlockedUsers: false, now: 100).channel
        let m1 = Self.message("m1", in: "g", from: "a", at: 200, seq: 1)
        let m2 = Self.message("m2", in: "g", from: "b", at: 300, seq: 2, hiddenFrom: "a")
        let m3 = Self.message("m3", in: "g", from: "a", at: 400, seq: 3, hiddenFrom: "b")
        let m4 = Self.message("m4", in: "g", from: "b", at: 500, seq: 4, hiddenFrom: "a")
        d.record(m1)
        d.record(m2)
        #expect(d.lastMessage(of: "g", for: "a") == m1)
        #expect(d.lastMessage(of: "g", for: "b") == m2)
        d.record(m3)
        #expect(d.lastMessage(of: "g", for: "a") == m3)
        #expect(d.lastMessage(of: "g", for: "b") == m2)
        d.record(m4)
        #expect(d.lastMessage(of: "g", for: "a") == m3, "a sees its own m3 (m4 is hidden from a)")
        #expect(d.lastMessage(of: "g", for: "b") == m4)
        #expect(d.lastActivity(of: channel, for: "a") == 400)
        #expect(d.lastActivity(of: channel, for: "b") == 500)
    }

    @Test("load restores channels, last messages, per-viewer last visible and blocks")
    func load() throws {
        var d = ChatDirectory()
        let channel = Channel(id: "g", type: .group, members: ["a", "b"], distinct: true, isOneToOne: true,
                              createdAt: 10, createdBy: "a")
        let m1 = Self.message("m1", in: "g", from: "a", at: 20, seq: 1)
        let m2 = Self.message("m2", in: "g", from: "b", at: 30, seq: 2, hiddenFrom: "a")
        d.load(users: [User(id: "a", createdAt: 0), User(id: "b", createdAt: 0)], channels: [channel],
               lastMessages: [m2], lastVisible: [(viewer: "a", message: m1)], blocks: [(blocker: "a", blocked: "b")])
        #expect(d.channels["g"] == channel)
        #expect(d.channelIDs(of: "b") == ["g"])
        #expect(d.lastMessage(of: "g", for: "a") == m1)
        #expect(d.lastMessage(of: "g", for: "b") == m2)
        #expect(d.blocks.hasBlocked("a", "b"))
        #expect(!d.blocks.hasBlocked("b", "a"))
        // The distinct index is restored too.
        let again = try d.createGroup(id: "g9", creator: "b", members: ["b", "a"], name: "", distinct: true,
                                      pushFromBlockedUsers: false, now: 40)
        #expect(!again.created)
        #expect(again.channel.id == "g")
    }

    // MARK: listChannels

    @Test("listChannels: newest per-viewer activity first, ties by id, only the viewer's channels")
    func listChannelsOrdering() throws {
        var d = Self.directory()
        _ = try d.createGroup(id: "c1", creator: "a", members: ["a", "b"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 100)
        _ = try d.createGroup(id: "c2", creator: "a", members: ["a", "b", "c"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 200)
        _ = try d.createGroup(id: "c3", creator: "a", members: ["a", "c"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 300)
        _ = d.createOpen(id: "c4", creator: "a", name: "", pushFromBlockedUsers: false, now: 300)
        _ = try d.createGroup(id: "cx", creator: "d", members: ["d", "e"], name: "", distinct: false,
                              pushFromBlockedUsers: false, now: 999)
        #expect(d.listChannels(of: "a", limit: 10, after: nil).channels.map(\.id) == ["c3", "c4", "c2", "c1"])
        d.record(Self.message("m1", in: "c1", from: "a", at: 400, seq: 1))
        #expect(d.listChannels(of: "a", limit: 10, after: nil).channels.map(\.id) == ["c1", "c3", "c4", "c2"])
        #expect(d.listChannels(of: "b", limit: 10, after: nil).channels.map(\.id) == ["c1", "c2"])
        // A message hidden from b (b blocked a in the 1-to-1 c1) does not move c1 for b, but does for a.
        d.record(Self.message("m2", in: "c2", from: "c", at: 500, seq: 1))
        d.record(Self.message("m3", in: "c1", from: "a", at: 600, seq: 2, hiddenFrom: "b"))
        #expect(d.listChannels(of: "b", limit: 10, after: nil).channels.map(\.id) == ["c2", "c1"])
        #expect(d.listChannels(of: "a", limit: 10, after: nil).channels.map(\.id) == ["c1", "c2", "c3", "c4"])
        #expect(d.listChannels(of: "zz", limit: 10, after: nil).channels.isEmpty)
    }

    @Test("listChannels paging: every channel exactly once, next only while more follow")
    func listChannelsPaging() throws {
        var d = Self.directory()
        // 7 channels, some with equal activity.
        let times: [Milliseconds] = [100, 300, 300, 200, 300, 50, 200]
        for (i, time) in times.enumerated() {
            _ = try d.createGroup(id: "c\(i)", creator: "a", members: ["a", "b", "c"], name: "", distinct: false,
                                  pushFromBlockedUsers: false, now: time)
        }
        let all = d.listChannels(of: "a", limit: 100, after: nil)
        #expect(all.next == nil)
        #expect(all.channels.map(\.id) == ["c1", "c2", "c4", "c3", "c6", "c0", "c5"])
        for limit in 1...8 {
            var seen: [ChannelID] = []
            var after: (activity: Milliseconds, id: ChannelID)?
            var pages = 0
            repeat {
                let page = d.listChannels(of: "a", limit: limit, after: after)
                #expect(page.channels.count <= limit)
                seen += page.channels.map(\.id)
                after = page.next
                if let next = page.next {
                    #expect(next.id == page.channels.last?.id)
                }
                pages += 1
            } while after != nil && pages < 20
            #expect(seen == all.channels.map(\.id), "limit \(limit)")
            #expect(pages == (times.count + limit - 1) / limit, "no empty trailing page at limit \(limit)")
        }
    }

    // MARK: listUsers

    @Test("listUsers: sorted by id, paging with afterID, next only while more follow")
    func listUsersPaging() {
        let d = Self.directory()
        let all = d.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 100, afterID: nil)
        #expect(all.users.map(\.id) == ["a", "b", "c", "d", "e"])
        #expect(all.next == nil)
        let first = d.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 2, afterID: nil)
        #expect(first.users.map(\.id) == ["a", "b"])
        #expect(first.next == "b")
        let second = d.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 2, afterID: "b")
        #expect(second.users.map(\.id) == ["c", "d"])
        #expect(second.next == "d")
        let third = d.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 2, afterID: "d")
        #expect(third.users.map(\.id) == ["e"])
        #expect(third.next == nil)
        let exact = d.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 5, afterID: nil)
        #expect(exact.users.count == 5)
        #expect(exact.next == nil)
    }

    @Test("listUsers filters: ids (unknown dropped, duplicates once), metadata key + values")
    func listUsersFilters() {
        let d = Self.directory()
        let byIDs = d.listUsers(ids: ["e", "a", "zz", "a"], metadataKey: nil, metadataValues: nil, limit: 10, afterID: nil)
        #expect(byIDs.users.map(\.id) == ["a", "e"])
        #expect(byIDs.next == nil)
        let red = d.listUsers(ids: nil, metadataKey: "team", metadataValues: ["red"], limit: 10, afterID: nil)
        #expect(red.users.map(\.id) == ["a", "c"])
        let redOrGreen = d.listUsers(ids: nil, metadataKey: "team", metadataValues: ["green", "red"], limit: 10, afterID: nil)
        #expect(redOrGreen.users.map(\.id) == ["a", "c", "e"])
        let both = d.listUsers(ids: ["b", "c", "e"], metadataKey: "team", metadataValues: ["red", "blue"], limit: 10, afterID: nil)
        #expect(both.users.map(\.id) == ["b", "c"])
        let none = d.listUsers(ids: nil, metadataKey: "role", metadataValues: [], limit: 10, afterID: nil)
        #expect(none.users.isEmpty)
        let paged = d.listUsers(ids: nil, metadataKey: "team", metadataValues: ["red", "green"], limit: 1, afterID: "a")
        #expect(paged.users.map(\.id) == ["c"])
        #expect(paged.next == "c")
    }

    @Test("listUsers keeps a sorted index (loaded and upserted users) and looks at most maxScannedUsers per page")
    func listUsersScanIsBounded() {
        var d = ChatDirectory()
        func id(_ n: Int) -> UserID { "u" + String(repeating: "0", count: 5 - String(n).count) + String(n) }
        let loaded = (0..<12_000).map { User(id: id($0 * 2), createdAt: 0) }
        d.load(users: loaded.shuffled(), channels: [], lastMessages: [], lastVisible: [], blocks: [])
        // Upserted later, between loaded ids; the only one with the metadata asked for.
        d.upsert(User(id: "u23997", metadata: ["team": "rare"], createdAt: 0))
        d.upsert(User(id: "u00001", createdAt: 0))
        let firstTwo = d.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 3, afterID: nil)
        #expect(firstTwo.users.map(\.id) == ["u00000", "u00001", "u00002"])

        var found: [UserID] = []
        var after: UserID?
        var pages = 0
        repeat {
            let page = d.listUsers(ids: nil, metadataKey: "team", metadataValues: ["rare"], limit: 10, afterID: after)
            found += page.users.map(\.id)
            after = page.next
            pages += 1
        } while after != nil && pages < 10
        #expect(found == ["u23997"])
        #expect(pages == 2, "12,002 users at most 10,000 per page")
    }

    // MARK: BlockGraph

    @Test("BlockGraph indexes both directions and forgets empty sets")
    func blockGraph() {
        var g = BlockGraph()
        g.block("a", "b")
        g.block("a", "b")
        g.block("a", "c")
        g.block("c", "a")
        #expect(g.hasBlocked("a", "b"))
        #expect(!g.hasBlocked("b", "a"))
        #expect(g.blocked(by: "a") == ["b", "c"])
        #expect(g.blockers(of: "a") == ["c"])
        #expect(g.blockers(of: "b") == ["a"])
        g.unblock("a", "b")
        g.unblock("a", "b")
        #expect(!g.hasBlocked("a", "b"))
        #expect(g.blockers(of: "b").isEmpty)
        #expect(g.blockers["b"] == nil)
        g.unblock("a", "c")
        #expect(g.blockedBy["a"] == nil)
        var other = BlockGraph()
        other.block("c", "a")
        #expect(g == other)
    }

    // MARK: presence

    @Test("offlineMembers: the push candidates follow presence and membership changes; open channels have none")
    func offlineMembersFollowPresence() throws {
        var d = Self.directory()
        d.setOnline("b", true)
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b", "c"], name: "g", distinct: false,
                              pushFromBlockedUsers: false, now: 1)
        #expect(d.offlineMembers(of: "g") == ["a", "c"])
        d.setOnline("a", true)
        d.setOnline("a", true)
        #expect(d.offlineMembers(of: "g") == ["c"])
        _ = try d.invite("g", by: "a", users: ["d"])
        #expect(d.offlineMembers(of: "g") == ["c", "d"])
        _ = try d.leave("g", user: "c")
        #expect(d.offlineMembers(of: "g") == ["d"])
        d.setOnline("b", false)
        d.setOnline("c", true)
        #expect(d.offlineMembers(of: "g") == ["b", "d"])
        _ = d.createOpen(id: "o", creator: "e", name: "o", pushFromBlockedUsers: false, now: 1)
        _ = try d.join("o", user: "d")
        #expect(d.offlineMembers(of: "o").isEmpty)
    }

    @Test("revisions move on every block change and every membership change")
    func revisionsMove() throws {
        var d = Self.directory()
        let blocks = d.blocks.revision
        d.blocks.block("a", "b")
        #expect(d.blocks.revision != blocks)
        let members = d.membershipRevision
        _ = try d.createGroup(id: "g", creator: "a", members: ["a", "b"], name: "g", distinct: false,
                              pushFromBlockedUsers: false, now: 1)
        #expect(d.membershipRevision != members)
        let afterCreate = d.membershipRevision
        _ = try d.invite("g", by: "a", users: ["c"])
        #expect(d.membershipRevision != afterCreate)
    }
}
