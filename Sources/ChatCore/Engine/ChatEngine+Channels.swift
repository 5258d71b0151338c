/// A channel request as the engine takes it (PROTOCOL.md §4 `channel.*` that change a channel).
public enum ChannelCommand: Sendable, Equatable {
    case create(type: ChannelType, userIDs: [UserID], name: String?, distinct: Bool, pushFromBlockedUsers: Bool?)
    case invite(ChannelID, [UserID])
    case join(ChannelID)
    case leave(ChannelID)
    /// `frozen` and `slowModeSeconds` are for owners, moderators and the backend (§16).
    case update(ChannelID, name: String?, pushFromBlockedUsers: Bool?, frozen: Bool? = nil, slowModeSeconds: Int? = nil)
    /// §16: an owner names a role; owners and moderators ban and unban; a member mutes the
    /// channel for itself (nil: unmutes).
    case setRole(ChannelID, UserID, ChannelRole)
    case ban(ChannelID, UserID, Ban)
    case unban(ChannelID, UserID)
    case mute(ChannelID, ChannelMute?)
    /// The app's backend creates a channel with its own id (or one the engine makes) and
    /// members and no creator (PROTOCOL.md §10 `POST /v1/admin/channels`).
    case define(ChannelID?, type: ChannelType, members: [UserID], name: String, distinct: Bool, pushFromBlockedUsers: Bool)
}

/// A channel request with who sent it, kept while the channel it changes is busy.
struct ChannelRequest: Sendable {
    var command: ChannelCommand
    var user: UserID
    var requester: Requester
    var now: Milliseconds
}

/// A channel write in flight: the channel as it will be, and what follows its commit.
struct ChannelWrite: Sendable {
    var channel: Channel
    /// Users whose sessions start (`added`) or stop (`removed`) receiving the channel.
    var added: [UserID]
    var removed: [UserID]
    var requester: Requester
    /// Whom the reply shows the channel to; nil answers `{}` (`channel.leave`).
    var viewer: UserID?
    /// The busy keys the write holds (the channel; a distinct create also its member set).
    var keys: [String]
    /// Who gets `channel.updated` when not the usual members (§16: a mute tells only its
    /// member, a shadow ban only those who moderate).
    var told: [UserID]? = nil
    /// When the request was made (bans that end are checked from it).
    var now: Milliseconds = 0
}

extension ChatEngine {
    /// A channel change from a client (PROTOCOL.md §4) or the admin API (`by` "": the
    /// backend, shown the channel as it is): planned against the directory,
    /// written, and applied (memberships, the hub, the reply, `channel.updated` to the
    /// other members) when the write commits. Changes to one channel go one at a time.
    public mutating func changeChannel(_ command: ChannelCommand, by user: UserID, for requester: Requester,
                                       now: Milliseconds) -> [EngineEffect] {
        let request = ChannelRequest(command: command, user: user, requester: requester, now: now)
        do throws(ChatError) {
            return try plan(request)
        } catch {
            return [.reply(requester, .failure(error))]
        }
    }

    private mutating func plan(_ request: ChannelRequest) throws(ChatError) -> [EngineEffect] {
        let user = request.user
        switch request.command {
        case .create(let type, let invitees, let name, let distinct, let push):
            switch type {
            case .group:
                let invited = sortInvitees(invitees, inviter: user)
                let members = [user] + invitees.filter { invited.admitted.contains($0) || invited.declined.contains($0) }
                let distinctKey = distinct ? "\u{1D}" + ChatDirectory.distinctKey(of: members) : nil
                if let distinctKey, park(request, on: distinctKey) { return [] }
                let plan = try directory.planGroup(
                    id: ids.make(prefix: "c_", at: request.now), creator: user, members: members, declined: invited.declined,
                    name: name ?? "", distinct: distinct, pushFromBlockedUsers: push ?? false, now: request.now)
                guard plan.created else { return [reply(plan.channel, to: request)] }
                return write(.createChannel(plan.channel), plan.channel, added: plan.channel.members, removed: [],
                             for: request, keys: [plan.channel.id] + (distinctKey.map { [$0] } ?? []))
            case .open:
                let channel = ChatDirectory.planOpen(id: ids.make(prefix: "c_", at: request.now), creator: user,
                                                     name: name ?? "", pushFromBlockedUsers: push ?? false, now: request.now)
                return write(.createChannel(channel), channel, added: channel.members, removed: [], for: request,
                             keys: [channel.id])
            }
        case .invite(let channelID, let invitees):
            if park(request, on: channelID) { return [] }
            for invitee in invitees { _ = try directory.user(invitee) }
            let invited = sortInvitees(invitees, inviter: user)
            let plan = try directory.planInvite(
                channelID, by: user, users: invitees.filter { invited.admitted.contains($0) || invited.declined.contains($0) },
                declined: invited.declined)
            guard !plan.added.isEmpty || plan.inviterViewChanged else { return [reply(plan.channel, to: request)] }
            return write(.updateChannel(plan.channel), plan.channel, added: plan.added, removed: [], for: request,
                         keys: [channelID])
        case .join(let channelID):
            if park(request, on: channelID) { return [] }
            let before = try directory.visibleChannel(channelID, to: user)
            let channel = try directory.planJoin(channelID, user: user)
            guard channel.members != before.members else { return [reply(channel, to: request)] }
            return write(.updateChannel(channel), channel, added: [user], removed: [], for: request, keys: [channelID])
        case .leave(let channelID):
            if park(request, on: channelID) { return [] }
            let channel = try directory.planLeave(channelID, user: user)
            return write(.updateChannel(channel), channel, added: [], removed: [user], for: request, keys: [channelID],
                         answersEmpty: true)
        case .update(let channelID, let name, let push, let frozen, let slowMode):
            if park(request, on: channelID) { return [] }
            // The backend (admin API) may change any channel; a client only its own options (§4).
            let actor: UserID? = request.requester.session == nil ? nil : user
            var channel = try directory.planUpdate(channelID, by: actor, name: name, pushFromBlockedUsers: push)
            if frozen != nil || slowMode != nil {
                channel = try directory.planSettings(channel, by: actor, frozen: frozen, slowModeSeconds: slowMode)
            }
            return write(.updateChannel(channel), channel, added: [], removed: [], for: request, keys: [channelID])
        case .setRole, .ban, .unban, .mute:
            return try planModeration(request)
        case .define(let givenID, let type, let members, let name, let distinct, let push):
            let channelID = givenID ?? ids.make(prefix: "c_", at: request.now)
            if park(request, on: channelID) { return [] }
            guard directory.channels[channelID] == nil else { throw ChatError(.badRequest, "channel \(channelID) exists") }
            var channel: Channel
            switch type {
            case .group:
                let distinctKey = distinct ? "\u{1D}" + ChatDirectory.distinctKey(of: members) : nil
                if let distinctKey, park(request, on: distinctKey) { return [] }
                let plan = try directory.planGroup(id: channelID, creator: "", members: members, name: name, distinct: distinct,
                                                   pushFromBlockedUsers: push, now: request.now)
                guard plan.created else { return [reply(plan.channel, to: request)] }
                return write(.createChannel(plan.channel), plan.channel, added: plan.channel.members, removed: [],
                             for: request, keys: [channelID] + (distinctKey.map { [$0] } ?? []))
            case .open:
                for member in members { _ = try directory.user(member) }
                channel = ChatDirectory.planOpen(id: channelID, creator: nil, name: name, pushFromBlockedUsers: push,
                                                 now: request.now)
                for member in members where !channel.members.contains(member) { channel.members.append(member) }
                return write(.createChannel(channel), channel, added: channel.members, removed: [], for: request,
                             keys: [channelID])
            }
        }
    }

    /// Keeps `request` for later when `key` has a write in flight.
    mutating func park(_ request: ChannelRequest, on key: String) -> Bool {
        guard busyChannels[key] != nil else { return false }
        busyChannels.modifyValue(forKey: key) { $0.append(request) }
        return true
    }

    mutating func write(_ change: StoreWrite, _ channel: Channel, added: [UserID], removed: [UserID],
                        for request: ChannelRequest, keys: [String], answersEmpty: Bool = false,
                        told: [UserID]? = nil) -> [EngineEffect] {
        let id = nextWriteID()
        for key in keys where busyChannels[key] == nil { busyChannels[key] = [] }
        channelWrites[id] = ChannelWrite(channel: channel, added: added, removed: removed, requester: request.requester,
                                         viewer: answersEmpty ? nil : request.user, keys: keys, told: told, now: request.now)
        return [.persist(id, change)]
    }

    private func reply(_ channel: Channel, to request: ChannelRequest) -> EngineEffect {
        .reply(request.requester, .result(encode(channel, for: request.user)))
    }

    mutating func channelCommitted(_ write: ChannelWrite, _ outcome: WriteOutcome) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        if outcome == .failed {
            effects.append(.reply(write.requester, .failure(ChatError(.internalError, "storage failed; retry"))))
        } else {
            let channel = write.channel
            effects += banEndChecks(channel, before: directory.channels[channel.id], now: write.now)
            directory.install(channel)
            if !write.added.isEmpty { effects.append(.addToChannel(write.added, channel.id)) }
            if !write.removed.isEmpty { effects.append(.removeFromChannel(write.removed, channel.id)) }
            var lastSeq: Int64?
            if case .committed(let result) = outcome { lastSeq = result.channelLastSeq }
            effects += followMembers(added: write.added, removed: write.removed, of: channel.id, lastSeq: lastSeq,
                                     now: write.now)
            // In an open channel a join or leave is told only to whoever joined (their other
            // connections): what one participant's request sends to others stays bounded.
            let told = write.told
                ?? (channel.type == .open && !(write.added.isEmpty && write.removed.isEmpty) ? write.added : channel.members)
            if let viewer = write.viewer {
                if !deferWhileLoading(channel.id, .channelReply(write.requester, viewer: viewer)) {
                    effects.append(.reply(write.requester, .result(encode(channel, for: viewer))))
                }
                effects += announce(channel, to: told, excluding: write.requester.session)
            } else {
                effects.append(.reply(write.requester, .result(Self.emptyObject)))
                effects += announce(channel, to: told, excluding: nil)
            }
        }
        // The requests that waited for this channel, in order; the first to write makes
        // the rest wait again.
        for key in write.keys {
            for request in busyChannels.removeValue(forKey: key) ?? [] {
                do throws(ChatError) {
                    effects += try plan(request)
                } catch {
                    effects.append(.reply(request.requester, .failure(error)))
                }
            }
        }
        return effects
    }

    /// A channel as `viewer` sees it (PROTOCOL.md §3), with its last message and read state
    /// for that viewer. An open channel lists no participant but the viewer (and all of them
    /// to the backend, viewer ""): its size is `memberCount`, so that no participant list
    /// travels to every participant.
    public func encode(_ channel: Channel, for viewer: UserID) -> [UInt8] {
        var w = JSONWriter()
        let read = directory.readState(of: channel.id, for: viewer)
        var shown = channel.seen(by: viewer)
        let memberCount = shown.members.count
        if channel.type == .open && !viewer.isEmpty { shown.members = shown.members.contains(viewer) ? [viewer] : [] }
        // Bans are for those who moderate (and the backend): a shadow ban is never shown to its user.
        let bans = viewer.isEmpty || channel.role(of: viewer).moderates ? channel.bans : nil
        WireEncoding.write(shown, memberCount: memberCount, lastMessage: directory.lastMessage(of: channel.id, for: viewer),
                           lastActivityAt: directory.lastActivity(of: channel, for: viewer), lastReadSeq: read.lastReadSeq,
                           unreadCount: read.unreadCount, version: directory.version(of: channel.id),
                           muted: channel.mutes[viewer] != nil, bans: bans, to: &w)
        return w.bytes
    }

    /// `channel.updated` to every member but `excluding`; one encoding per distinct view
    /// (1-to-1 channels with hidden messages, inviters whose invitees blocked them, and
    /// members at different read marks see their own; in an open channel each participant).
    public func announce(_ channel: Channel, excluding: SessionID?) -> [EngineEffect] {
        announce(channel, to: channel.members, excluding: excluding)
    }

    /// `channel.updated` to `users`, members of `channel`.
    func announce(_ channel: Channel, to users: [UserID], excluding: SessionID?) -> [EngineEffect] {
        var byView: [String: [UserID]] = [:]
        var order: [String] = []
        let ownView = channel.type == .open
        for member in users {
            let lastSeen = directory.lastMessage(of: channel.id, for: member)?.id ?? ""
            let members = channel.inviterViews[member] == nil && !ownView ? "" : "\u{1E}" + member
            let read = directory.readState(of: channel.id, for: member)
            let moderation = (channel.mutes[member] != nil ? "m" : "") + (channel.role(of: member).moderates ? "b" : "")
            let view = lastSeen + members + "\u{1E}\(read.lastReadSeq)\u{1E}\(read.unreadCount)\u{1E}" + moderation
            if byView[view] == nil { order.append(view) }
            byView[view, default: []].append(member)
        }
        return order.compactMap { view in
            guard let members = byView[view], let viewer = members.first else { return nil }
            let payload = WireEncoding.event("channel.updated") { w in
                w.raw(bytes: encode(channel, for: viewer))
            }
            return .publishToUsers(members, payload: payload, excluding: excluding)
        }
    }

    /// Invitees that land, and those who blocked the inviter: they are silently left out
    /// (§5) and, unless `revealBlockedBy`, shown to the inviter as invited (`declined`). With
    /// `excludeFromInvitations` or in strict mode, invitees the inviter blocked are dropped
    /// from both.
    public func sortInvitees(_ invitees: [UserID], inviter: UserID) -> (admitted: [UserID], declined: Set<UserID>) {
        var admitted: [UserID] = []
        var declined: Set<UserID> = []
        for invitee in invitees {
            if directory.blocks.hasBlocked(inviter, invitee)
                && (settings.excludeFromInvitations || settings.blockingMode == .strict) { continue }
            if invitee != inviter && directory.blocks.hasBlocked(invitee, inviter) {
                // Where blocks are revealed anyway, the inviter simply sees who is in.
                if !settings.revealBlockedBy { declined.insert(invitee) }
            } else {
                admitted.append(invitee)
            }
        }
        return (admitted, declined)
    }
}
