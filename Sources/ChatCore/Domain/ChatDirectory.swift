/// The gateway's in-memory state: users, channels, memberships, the last
/// message of each channel and the block graph. Pure and synchronous; the
/// gateway owns one and persists what changes.
public struct ChatDirectory: Sendable {
    public private(set) var users: [UserID: User] = [:]
    /// Every user id in ascending order: `user.list` pages through it without sorting per request.
    private var sortedUserIDs: [UserID] = []
    public private(set) var channels: [ChannelID: Channel] = [:]
    public var blocks = BlockGraph()
    private var userChannels: [UserID: Set<ChannelID>] = [:]
    private var distinctIndex: [String: ChannelID] = [:]
    private var lastMessage: [ChannelID: Message] = [:]
    /// Each channel's version (§15): the latest change this node applied.
    private var versions: [ChannelID: Int64] = [:]
    /// For members the newest message is hidden from: the newest message each of them sees (nil: none).
    private var lastVisible: [ChannelID: [UserID: Message?]] = [:]
    /// §16: users shadow-banned app-wide (their ban on record), and for each user who muted it.
    public private(set) var shadowBannedUsers: Set<UserID> = []
    private var muters: [UserID: Set<UserID>] = [:]
    /// Users with at least one live connection, and the members of each group
    /// channel without one (the push candidates), kept current incrementally.
    private var online: Set<UserID> = []
    private var offlineMembers: [ChannelID: Set<UserID>] = [:]
    /// Moves whenever a channel's members change, so callers can cache what they derive from them.
    public private(set) var membershipRevision: UInt64 = 0
    /// Each member's read mark and what after it does not count as unread (§14).
    public private(set) var reads = ReadStates()
    /// Strict mode only: what each channel's senders sent, so that counts and `lastMessage`
    /// follow the block relations as they stand now, as history does (§5).
    public private(set) var messagesBySender: MessagesBySender?

    /// Strict mode: a blocked pair (either way) does not see each other's messages at all,
    /// so each view subtracts the other's messages as they stand now.
    public var isStrict: Bool {
        get { messagesBySender != nil }
        set { if newValue != isStrict { messagesBySender = newValue ? MessagesBySender() : nil } }
    }

    public init() {}

    // MARK: loading

    public mutating func load(users: [User], channels: [Channel], lastMessages: [Message],
                              lastVisible: [(viewer: UserID, message: Message)], blocks: [(blocker: UserID, blocked: UserID)],
                              readMarks: [ReadMark] = [], messagesAfterMarks: [MessageHeader] = [],
                              blockingMode: DeliveryPolicy.Mode = .standard, versions: [ChannelID: Int64] = [:]) {
        isStrict = blockingMode == .strict
        for user in users {
            self.users[user.id] = user
            indexModeration(of: user, before: nil)
        }
        sortedUserIDs = self.users.keys.sorted()
        for channel in channels { insert(channel) }
        for (blocker, blocked) in blocks { self.blocks.block(blocker, blocked) }
        loadStreams(ChannelStreams(channels: channels.map(\.id), lastMessages: lastMessages, lastVisible: lastVisible,
                                   readMarks: readMarks, messagesAfterMarks: messagesAfterMarks, versions: versions))
    }

    /// Installs the stored state of the channels `streams` covers (`ChannelStreams`): at
    /// start-up for all of them, in a cluster for the channels a node starts following
    /// (after `forgetStreams`).
    public mutating func loadStreams(_ streams: ChannelStreams) {
        for (channel, version) in streams.versions { advanceVersion(of: channel, to: version) }
        for message in streams.lastMessages {
            lastMessage[message.channelID] = message
            messagesBySender?.recordNewest(message)
            // Until the store names what the member sees instead (`lastVisible`): nothing.
            if let hidden = message.hiddenFrom, hidden != Message.hiddenFromEveryone {
                self.lastVisible[message.channelID, default: [:]][hidden] = .some(nil)
            }
        }
        // A member without a stored mark has read up to the newest message as loaded; the
        // stored marks replace that below.
        for channel in streams.channels {
            reads.forget(channel: channel)
            let newestSeq = lastMessage[channel]?.seq ?? 0
            for member in channels[channel]?.members ?? [] { reads.joined(member, channel: channel, newestSeq: newestSeq) }
        }
        for (viewer, message) in streams.lastVisible {
            self.lastVisible[message.channelID, default: [:]][viewer] = message
            messagesBySender?.recordNewest(message)
        }
        for mark in streams.readMarks { reads.load(mark.userID, channel: mark.channelID, lastReadSeq: mark.lastReadSeq) }
        for header in streams.messagesAfterMarks {
            if header.deleted {
                reads.uncountedAnywhere(header.seq, channel: header.channelID)
                continue
            }
            if header.hiddenFrom == Message.hiddenFromEveryone {
                reads.uncountedAnywhere(header.seq, channel: header.channelID)
                continue
            }
            reads.uncounted(header.seq, channel: header.channelID, for: Self.uncountedMembers(sender: header.senderID,
                                                                                          hiddenFrom: header.hiddenFrom))
            messagesBySender?.record(header)
        }
    }

    /// Forgets what this node knew of `channels`' messages, views, read marks and version,
    /// before their stored state is installed again (`loadStreams`). Members, roles and bans
    /// stay: every node hears those.
    public mutating func forgetStreams(of channels: some Sequence<ChannelID>) {
        for channel in channels {
            lastMessage[channel] = nil
            lastVisible[channel] = nil
            versions[channel] = nil
            reads.forget(channel: channel)
            messagesBySender?.forget(channel: channel)
        }
    }

    /// Who a message never counts as unread for: its sender and the member it is stored hidden
    /// from. (In strict mode the members blocked with its sender do not count it either, as
    /// long as the block stands: `readState` subtracts those.)
    private static func uncountedMembers(sender: UserID, hiddenFrom: UserID?) -> [UserID] {
        if let hiddenFrom { return [sender, hiddenFrom] }
        return [sender]
    }

    /// Strict mode, at start-up: a stored message that may be its sender's newest in its channel.
    public mutating func recordSenderNewest(_ message: Message) {
        messagesBySender?.recordNewest(message)
    }

    /// Users blocked with `user` either way (strict mode's cut).
    public func blockedEitherWay(with user: UserID) -> Set<UserID> {
        blocks.blockers(of: user).union(blocks.blocked(by: user))
    }

    private mutating func insert(_ channel: Channel) {
        if let old = channels[channel.id] {
            for member in old.members { userChannels.modifyValue(forKey: member) { $0.remove(channel.id) } }
            unindexDistinct(old)
        }
        channels[channel.id] = channel
        let newestSeq = lastMessage[channel.id]?.seq ?? 0
        for member in channel.members {
            userChannels[member, default: []].insert(channel.id)
            reads.joined(member, channel: channel.id, newestSeq: newestSeq)
        }
        if channel.type != .open { offlineMembers[channel.id] = Set(channel.members.filter { !online.contains($0) }) }
        membershipRevision &+= 1
        if channel.distinct {
            distinctIndex[Self.distinctKey(channel.members)] = channel.id
            for (inviter, view) in channel.inviterViews { distinctIndex[Self.distinctKey(view, seenBy: inviter)] = channel.id }
        }
    }

    private mutating func unindexDistinct(_ channel: Channel) {
        guard channel.distinct else { return }
        if distinctIndex[Self.distinctKey(channel.members)] == channel.id { distinctIndex[Self.distinctKey(channel.members)] = nil }
        for (inviter, view) in channel.inviterViews where distinctIndex[Self.distinctKey(view, seenBy: inviter)] == channel.id {
            distinctIndex[Self.distinctKey(view, seenBy: inviter)] = nil
        }
    }

    private static func distinctKey(_ members: [UserID]) -> String {
        Set(members).sorted().joined(separator: "\u{1F}")
    }

    /// The key of a distinct channel as one inviter sees its members: only that inviter finds it by it.
    private static func distinctKey(_ view: [UserID], seenBy inviter: UserID) -> String {
        inviter + "\u{1E}" + distinctKey(view)
    }

    // MARK: presence

    public mutating func setOnline(_ user: UserID, _ isOnline: Bool) {
        guard isOnline ? online.insert(user).inserted : online.remove(user) != nil else { return }
        for channelID in userChannels[user] ?? [] where offlineMembers[channelID] != nil {
            if isOnline { offlineMembers.modifyValue(forKey: channelID) { $0.remove(user) } } else { offlineMembers.modifyValue(forKey: channelID) { $0.insert(user) } }
        }
    }

    /// Whether the user holds a live connection (in a cluster: on any node).
    public func isOnline(_ user: UserID) -> Bool { online.contains(user) }

    public var onlineUsers: Set<UserID> { online }

    /// Members of a group channel with no live connection (empty for open channels).
    public func offlineMembers(of channelID: ChannelID) -> Set<UserID> { offlineMembers[channelID] ?? [] }

    // MARK: users

    public func user(_ id: UserID) throws(ChatError) -> User {
        guard let user = users[id] else { throw ChatError(.userNotFound, "no user \(id)") }
        return user
    }

    public mutating func upsert(_ user: User) {
        let before = users.updateValue(user, forKey: user.id)
        indexModeration(of: user, before: before)
        if before == nil {
            sortedUserIDs.insert(user.id, at: Self.firstIndex(after: user.id, in: sortedUserIDs, orEqual: true))
        }
    }

    private mutating func indexModeration(of user: User, before: User?) {
        if user.ban?.shadow == true { shadowBannedUsers.insert(user.id) } else { shadowBannedUsers.remove(user.id) }
        guard user.mutedUsers != before?.mutedUsers ?? [] else { return }
        for muted in (before?.mutedUsers ?? []).subtracting(user.mutedUsers) { muters.modifyValue(forKey: muted) { $0.remove(user.id) } }
        for muted in user.mutedUsers { muters[muted, default: []].insert(user.id) }
    }

    /// Users who muted `user` (§16).
    public func muters(of user: UserID) -> Set<UserID> { muters[user] ?? [] }

    /// Members of `channel` whose shadow ban is on record, in the channel or app-wide (§16):
    /// what they produce reaches nobody else.
    public func shadowBanned(in channel: Channel) -> Set<UserID> {
        var banned: Set<UserID> = []
        for (user, ban) in channel.bans where ban.shadow { banned.insert(user) }
        for user in shadowBannedUsers where userChannels[user]?.contains(channel.id) == true { banned.insert(user) }
        return banned
    }

    /// Whether `user`'s shadow ban (channel or app-wide) is in force at `now`.
    public func isShadowBanned(_ user: UserID, in channel: Channel, at now: Milliseconds) -> Bool {
        if !channel.bans.isEmpty, channel.ban(on: user, at: now)?.shadow == true { return true }
        guard shadowBannedUsers.contains(user), let ban = users[user]?.ban, ban.shadow else { return false }
        return ban.isInForce(at: now)
    }

    /// The first index whose id is greater than `id` (or not less, with `orEqual`): binary search.
    private static func firstIndex(after id: UserID, in ids: [UserID], orEqual: Bool) -> Int {
        var low = 0
        var high = ids.count
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id || (!orEqual && ids[middle] == id) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// How many users one `user.list` page may look at when a metadata filter skips most of them.
    public static let maxScannedUsers = 10_000

    /// Users sorted by id, after `afterID`, filtered; `next` is the id to continue after when
    /// more may follow. Without `ids` it walks the sorted index from `afterID`, at most
    /// `maxScannedUsers` of them per page, so a filter that matches few users costs a bounded
    /// amount per request (the page may then be short, with `next` set).
    public func listUsers(ids: [UserID]?, metadataKey: String?, metadataValues: [String]?, limit: Int,
                          afterID: UserID?) -> (users: [User], next: UserID?) {
        let wanted = metadataValues.map(Set.init)
        func matches(_ user: User) -> Bool {
            guard let metadataKey, let wanted else { return true }
            return user.metadata[metadataKey].map(wanted.contains) ?? false
        }
        if let ids {
            var candidates = Set(ids).compactMap { users[$0] }.filter(matches)
            candidates.sort { $0.id < $1.id }
            if let afterID { candidates = candidates.filter { $0.id > afterID } }
            let page = Array(candidates.prefix(limit))
            return (page, candidates.count > limit ? page.last?.id : nil)
        }
        var page: [User] = []
        var index = afterID.map { Self.firstIndex(after: $0, in: sortedUserIDs, orEqual: false) } ?? 0
        var scanned = 0
        while index < sortedUserIDs.count {
            if scanned == Self.maxScannedUsers { return (page, sortedUserIDs[index - 1]) }
            let id = sortedUserIDs[index]
            index += 1
            scanned += 1
            guard let user = users[id], matches(user) else { continue }
            if page.count == limit { return (page, page.last?.id) }
            page.append(user)
        }
        return (page, nil)
    }

    // MARK: channels

    public func channelIDs(of user: UserID) -> Set<ChannelID> { userChannels[user] ?? [] }

    /// A channel the user may see: a group it belongs to, or any open channel.
    /// A plain ban on record hides the channel from its user (§16).
    public func visibleChannel(_ id: ChannelID, to user: UserID) throws(ChatError) -> Channel {
        guard let channel = channels[id], channel.type == .open || channel.members.contains(user),
              channel.bans[user].map({ $0.shadow }) ?? true else {
            throw ChatError(.channelNotFound, "no channel \(id)")
        }
        return channel
    }

    /// A channel the user is in (member of a group, participant of an open channel).
    public func memberChannel(_ id: ChannelID, of user: UserID) throws(ChatError) -> Channel {
        let channel = try visibleChannel(id, to: user)
        guard channel.members.contains(user) else { throw ChatError(.notAMember, "not a member of \(id)") }
        return channel
    }

    /// Creates a group channel of `members` (creator first), or returns the existing
    /// distinct channel of the same member set.
    ///
    /// `declined` are invitees left out because they blocked the creator (§5): they do not
    /// become members, but the creator is shown the channel as if they had (same members,
    /// same `isOneToOne`, the same distinct channel on a second request).
    public mutating func createGroup(id: ChannelID, creator: UserID, members: [UserID], declined: Set<UserID> = [],
                                     name: String, distinct: Bool, pushFromBlockedUsers: Bool, now: Milliseconds) throws(ChatError)
        -> (channel: Channel, created: Bool)
    {
        let plan = try planGroup(id: id, creator: creator, members: members, declined: declined, name: name, distinct: distinct,
                                 pushFromBlockedUsers: pushFromBlockedUsers, now: now)
        if plan.created { install(plan.channel) }
        return plan
    }

    /// `createGroup` without changing anything: the channel it would create (to `install`
    /// once stored), or the existing distinct channel (`created` false).
    public func planGroup(id: ChannelID, creator: UserID, members: [UserID], declined: Set<UserID> = [],
                          name: String, distinct: Bool, pushFromBlockedUsers: Bool, now: Milliseconds) throws(ChatError)
        -> (channel: Channel, created: Bool)
    {
        var requested: [UserID] = []
        for member in members where !requested.contains(member) {
            guard users[member] != nil else { throw ChatError(.userNotFound, "no user \(member)") }
            requested.append(member)
        }
        if distinct {
            // The backend (no creator) finds any distinct channel of these members; a user only one it is in.
            if let existing = distinctIndex[Self.distinctKey(requested)], let channel = channels[existing],
               creator.isEmpty || channel.members.contains(creator) {
                return (channel, false)
            }
            if let existing = distinctIndex[Self.distinctKey(requested, seenBy: creator)], let channel = channels[existing] {
                return (channel, false)
            }
        }
        let real = requested.filter { !declined.contains($0) }
        let views = real.count < requested.count && real.contains(creator) ? [creator: requested] : [:]
        let channel = Channel(id: id, type: .group, name: name, members: real, distinct: distinct,
                              isOneToOne: requested.count == 2, pushFromBlockedUsers: pushFromBlockedUsers,
                              createdAt: now, createdBy: creator, inviterViews: views)
        return (channel, true)
    }

    /// The key under which a distinct channel of `members` is found (any order, no repeats).
    public static func distinctKey(of members: [UserID]) -> String { distinctKey(members) }

    /// Makes `channel` (created or changed elsewhere: planned, then stored) part of the
    /// directory, with its memberships and distinct keys.
    public mutating func install(_ channel: Channel) {
        insert(channel)
    }

    /// Creates an open channel; its creator is its first participant.
    public mutating func createOpen(id: ChannelID, creator: UserID?, name: String, pushFromBlockedUsers: Bool,
                                    now: Milliseconds) -> Channel {
        let channel = Self.planOpen(id: id, creator: creator, name: name, pushFromBlockedUsers: pushFromBlockedUsers, now: now)
        insert(channel)
        return channel
    }

    public static func planOpen(id: ChannelID, creator: UserID?, name: String, pushFromBlockedUsers: Bool,
                                now: Milliseconds) -> Channel {
        Channel(id: id, type: .open, name: name, members: creator.map { [$0] } ?? [],
                pushFromBlockedUsers: pushFromBlockedUsers, createdAt: now, createdBy: creator ?? "")
    }

    /// Adds users to a group channel; returns it, who was new, and whether the inviter's
    /// view changed (a `declined` invitee, one who blocked the inviter, joins only that view:
    /// §5). A third member ends the channel's 1-to-1 status for good.
    public mutating func invite(_ id: ChannelID, by inviter: UserID, users invitees: [UserID], declined: Set<UserID> = [])
        throws(ChatError) -> (channel: Channel, added: [UserID], inviterViewChanged: Bool)
    {
        let plan = try planInvite(id, by: inviter, users: invitees, declined: declined)
        if !plan.added.isEmpty || plan.inviterViewChanged { install(plan.channel) }
        return plan
    }

    /// `invite` without changing anything.
    public func planInvite(_ id: ChannelID, by inviter: UserID, users invitees: [UserID], declined: Set<UserID> = [])
        throws(ChatError) -> (channel: Channel, added: [UserID], inviterViewChanged: Bool)
    {
        var channel = try memberChannel(id, of: inviter)
        guard channel.type == .group else { throw ChatError(.forbidden, "open channels are joined, not invited to") }
        let inviterView = channel.members(seenBy: inviter)
        var shown: [UserID] = []
        for invitee in invitees where !inviterView.contains(invitee) && !shown.contains(invitee) {
            guard users[invitee] != nil else { throw ChatError(.userNotFound, "no user \(invitee)") }
            shown.append(invitee)
        }
        var added: [UserID] = []
        for invitee in invitees where !declined.contains(invitee) && !channel.members.contains(invitee) && !added.contains(invitee) {
            guard users[invitee] != nil else { throw ChatError(.userNotFound, "no user \(invitee)") }
            if let ban = channel.bans[invitee], !ban.shadow {
                throw ChatError(.forbidden, "\(invitee) is banned from this channel")
            }
            added.append(invitee)
        }
        guard !added.isEmpty || !shown.isEmpty else { return (channel, [], false) }
        channel.members += added
        for (viewer, view) in channel.inviterViews {
            channel.inviterViews[viewer] = view + added.filter { !view.contains($0) }
        }
        if shown.contains(where: declined.contains) {
            channel.inviterViews[inviter] = inviterView + shown
        }
        // Anyone joining a 1-to-1 makes it 1-to-N for good (PROTOCOL.md §5).
        channel.isOneToOne = false
        return (channel, added, !shown.isEmpty)
    }

    public mutating func join(_ id: ChannelID, user: UserID) throws(ChatError) -> Channel {
        let channel = try planJoin(id, user: user)
        if channels[id]?.members != channel.members { insert(channel) }
        return channel
    }

    /// `join` without changing anything (the channel as it is when `user` is in already).
    public func planJoin(_ id: ChannelID, user: UserID) throws(ChatError) -> Channel {
        var channel = try visibleChannel(id, to: user)
        guard channel.type == .open else { throw ChatError(.forbidden, "only open channels can be joined") }
        if !channel.members.contains(user) { channel.members.append(user) }
        return channel
    }

    public mutating func leave(_ id: ChannelID, user: UserID) throws(ChatError) -> Channel {
        let channel = try planLeave(id, user: user)
        insert(channel)
        return channel
    }

    /// `leave` without changing anything.
    public func planLeave(_ id: ChannelID, user: UserID) throws(ChatError) -> Channel {
        var channel = try memberChannel(id, of: user)
        channel.members.removeAll { $0 == user }
        channel.inviterViews[user] = nil
        for (viewer, view) in channel.inviterViews { channel.inviterViews[viewer] = view.filter { $0 != user } }
        return channel
    }

    /// Renames a channel or changes its push option; `user` nil is the app's backend (admin API).
    public mutating func update(_ id: ChannelID, by user: UserID?, name: String?, pushFromBlockedUsers: Bool?) throws(ChatError) -> Channel {
        let channel = try planUpdate(id, by: user, name: name, pushFromBlockedUsers: pushFromBlockedUsers)
        insert(channel)
        return channel
    }

    /// `update` without changing anything.
    public func planUpdate(_ id: ChannelID, by user: UserID?, name: String?, pushFromBlockedUsers: Bool?) throws(ChatError) -> Channel {
        var channel: Channel
        if let user {
            channel = try memberChannel(id, of: user)
        } else {
            guard let existing = channels[id] else { throw ChatError(.channelNotFound, "no channel \(id)") }
            channel = existing
        }
        // Only the creator or the backend: a member the creator blocked must not be able to
        // turn pushes from blocked users back on.
        if pushFromBlockedUsers != nil, let user, channel.createdBy != user {
            throw ChatError(.forbidden, "only the channel's creator may change pushFromBlockedUsers")
        }
        if let name { channel.name = name }
        if let pushFromBlockedUsers { channel.pushFromBlockedUsers = pushFromBlockedUsers }
        return channel
    }

    // MARK: messages and activity

    /// Records a committed message as its channel's newest. `hiddenFor` are the
    /// members whose channel list it must not move (its stored `hiddenFrom`, and
    /// in strict mode everyone the sender is blocked with): they keep seeing what
    /// they saw before.
    public mutating func record(_ message: Message, hiddenFor: Set<UserID> = []) {
        let channel = message.channelID
        advanceVersion(of: channel, to: message.version)
        if message.hiddenFrom == Message.hiddenFromEveryone {
            recordHiddenFromEveryone(message)
            return
        }
        if messagesBySender != nil {
            // Strict mode: views are derived from the relations at view time.
            messagesBySender?.record(message)
            lastMessage[channel] = message
            reads.uncounted(message.seq, channel: channel, for: Self.uncountedMembers(sender: message.senderID,
                                                                                  hiddenFrom: message.hiddenFrom))
            return
        }
        var hidden = hiddenFor
        if let stored = message.hiddenFrom { hidden.insert(stored) }
        var next: [UserID: Message?] = [:]
        for viewer in hidden { next[viewer] = .some(lastMessage(of: channel, for: viewer)) }
        lastVisible[channel] = next.isEmpty ? nil : next
        lastMessage[channel] = message
        if hidden.isEmpty {
            // A message everyone sees counts for nobody but its sender (no set to build).
            reads.uncounted(message.seq, channel: channel, for: CollectionOfOne(message.senderID))
        } else {
            hidden.insert(message.senderID)
            reads.uncounted(message.seq, channel: channel, for: hidden)
        }
    }

    /// A message only its sender sees (§16 shadow ban): the newest for the sender; everyone
    /// else keeps what they saw (kept under `hiddenFromEveryone` until a message for
    /// everyone comes), and it counts as unread for nobody.
    private mutating func recordHiddenFromEveryone(_ message: Message) {
        let channel = message.channelID
        var views = lastVisible[channel] ?? [:]
        if views[Message.hiddenFromEveryone] == nil {
            views[Message.hiddenFromEveryone] = .some(lastMessage(of: channel, for: Message.hiddenFromEveryone))
        }
        views[message.senderID] = nil
        lastVisible[channel] = views
        lastMessage[channel] = message
        reads.uncounted(message.seq, channel: channel, for: channels[channel]?.members ?? [])
    }

    /// Moves `user`'s read mark in a channel to `seq` if that is later (a committed
    /// `channel.markRead`); true when it moved.
    @discardableResult
    public mutating func markRead(_ user: UserID, channel: ChannelID, seq: Int64) -> Bool {
        reads.markRead(user, channel: channel, seq: seq)
    }

    /// `lastReadSeq` and `unreadCount` of a channel as `viewer` sees them (§14).
    public func readState(of channelID: ChannelID, for viewer: UserID) -> (lastReadSeq: Int64, unreadCount: Int64) {
        let lastRead = reads.lastReadSeq(of: viewer, in: channelID)
        var unread = reads.unreadCount(of: viewer, in: channelID, newestSeq: lastMessage[channelID]?.seq ?? 0)
        if let messagesBySender, unread > 0 {
            for other in blockedEitherWay(with: viewer) where other != viewer {
                unread -= messagesBySender.count(of: other, in: channelID, after: lastRead)
            }
        }
        return (lastRead, max(0, unread))
    }

    /// The channel's version as this node last applied it (§15).
    public func version(of channelID: ChannelID) -> Int64 { versions[channelID] ?? 0 }

    public mutating func advanceVersion(of channelID: ChannelID, to version: Int64) {
        if version > versions[channelID] ?? 0 { versions[channelID] = version }
    }

    /// A stored message changed (§15): the copies kept as channels' last messages follow it,
    /// without moving any channel list; a tombstone no longer counts as unread; an edit
    /// that hid it from a 1-to-1 member no longer counts for that member.
    public mutating func messageChanged(_ message: Message) {
        let channel = message.channelID
        advanceVersion(of: channel, to: message.version)
        if let previous = lastMessage[channel], previous.seq == message.seq {
            if let hidden = message.hiddenFrom, previous.hiddenFrom == nil, lastVisible[channel]?[hidden] == nil {
                // An edit hid the newest message from a 1-to-1 member: its list keeps showing
                // the message as it was before, never the edit.
                lastVisible[channel, default: [:]][hidden] = .some(previous)
            }
            lastMessage[channel] = message
        }
        if var views = lastVisible[channel] {
            for (viewer, visible) in views where visible?.seq == message.seq && !message.isHidden(from: viewer) {
                views[viewer] = .some(message)
            }
            lastVisible[channel] = views
        }
        if message.isDeleted || message.hiddenFrom == Message.hiddenFromEveryone {
            reads.uncountedAnywhere(message.seq, channel: channel)
            messagesBySender?.forget(message.seq, of: message.senderID, in: channel)
        } else if let hidden = message.hiddenFrom {
            reads.uncountedAnywhere(message.seq, channel: channel, for: [hidden])
        }
    }

    /// The channel's newest message, whoever may see it.
    public func newestMessage(of channelID: ChannelID) -> Message? { lastMessage[channelID] }

    /// Sets what `viewer` sees as the channel's last message when the newest is not for it.
    public mutating func setLastVisible(_ message: Message?, of channelID: ChannelID, for viewer: UserID) {
        lastVisible[channelID, default: [:]][viewer] = .some(message)
    }

    /// The newest message `viewer` can see in a channel.
    public func lastMessage(of channelID: ChannelID, for viewer: UserID) -> Message? {
        if let messagesBySender {
            guard let newest = lastMessage[channelID] else { return nil }
            let cut = blockedEitherWay(with: viewer)
            if newest.senderID == viewer || (!newest.isHidden(from: viewer) && !cut.contains(newest.senderID)) { return newest }
            return messagesBySender.newestVisible(in: channelID, to: viewer, hides: cut.contains)
        }
        let views = lastVisible[channelID]
        if let fallback = views?[viewer] { return fallback }
        if let newest = lastMessage[channelID], newest.isHidden(from: viewer), let others = views?[Message.hiddenFromEveryone] {
            return others
        }
        return lastMessage[channelID]
    }

    /// `lastActivityAt` as `viewer` sees it: its last visible message, else the channel's creation.
    public func lastActivity(of channel: Channel, for viewer: UserID) -> Milliseconds {
        max(channel.createdAt, lastMessage(of: channel.id, for: viewer)?.createdAt ?? 0)
    }

    /// The user's channels, newest activity first; paging after (activity, id).
    public func listChannels(of user: UserID, limit: Int, after: (activity: Milliseconds, id: ChannelID)?)
        -> (channels: [Channel], next: (activity: Milliseconds, id: ChannelID)?)
    {
        var entries = channelIDs(of: user).compactMap { id -> (Milliseconds, Channel)? in
            guard let channel = channels[id] else { return nil }
            return (lastActivity(of: channel, for: user), channel)
        }
        entries.sort { $0.0 != $1.0 ? $0.0 > $1.0 : $0.1.id < $1.1.id }
        if let after {
            entries = entries.filter { $0.0 < after.activity || ($0.0 == after.activity && $0.1.id > after.id) }
        }
        let page = entries.prefix(limit)
        let next = entries.count > limit ? page.last.map { ($0.0, $0.1.id) } : nil
        return (page.map(\.1), next)
    }
}
