/// A send's slow mode, for the limiter every node shares (cluster mode).
public struct SlowModeAsk: Sendable, Equatable {
    public var channel: ChannelID
    public var intervalMilliseconds: Milliseconds

    public init(channel: ChannelID, intervalMilliseconds: Milliseconds) {
        self.channel = channel
        self.intervalMilliseconds = intervalMilliseconds
    }
}

/// A member's last accepted send in a channel in slow mode.
struct SlowModeKey: Hashable, Sendable {
    var channel: ChannelID
    var user: UserID
}

/// PROTOCOL.md §16 in the engine: the channel's moderation goes through the channel write
/// path (one change at a time per channel, state only with the commit, replicated with the
/// channel row), user mutes and app-wide bans through the user's row.
extension ChatEngine {
    /// §16: `slowModeSeconds` runs from 0 (off) to an hour.
    public static let maxSlowModeSeconds = 3600

    /// Entries of the slow-mode table past which those older than any slow mode are dropped.
    static let slowModeTableBound = 10_000

    mutating func planModeration(_ request: ChannelRequest) throws(ChatError) -> [EngineEffect] {
        // The backend (admin API) acts as itself; a client as a member with its role.
        let actor: UserID? = request.requester.session == nil && request.user.isEmpty ? nil : request.user
        switch request.command {
        case .setRole(let channelID, let target, let role):
            if park(request, on: channelID) { return [] }
            let channel = try directory.planSetRole(channelID, user: target, role: role, by: actor)
            return write(.updateChannel(channel), channel, added: [], removed: [], for: request, keys: [channelID])
        case .ban(let channelID, let target, let ban):
            if park(request, on: channelID) { return [] }
            let plan = try directory.planBan(channelID, user: target, ban: ban, by: actor)
            // A plain ban changes who is in: the members hear it. A shadow ban is told only to
            // those who moderate, so nothing reaches its user.
            let told = ban.shadow ? directory.moderators(of: plan.channel) : plan.channel.members
            return write(.updateChannel(plan.channel), plan.channel, added: [], removed: plan.removed, for: request,
                         keys: [channelID], answersEmpty: true, told: told)
        case .unban(let channelID, let target):
            if park(request, on: channelID) { return [] }
            let channel = try directory.planUnban(channelID, user: target, by: actor)
            return write(.updateChannel(channel), channel, added: [], removed: [], for: request, keys: [channelID],
                         answersEmpty: true, told: directory.moderators(of: channel))
        case .mute(let channelID, let mute):
            if park(request, on: channelID) { return [] }
            let channel = try directory.planMute(channelID, by: request.user, mute: mute)
            // Told to the member's own connections only: a mute is never shown to anyone else.
            return write(.updateChannel(channel), channel, added: [], removed: [], for: request, keys: [channelID],
                         told: [request.user])
        default:
            return []
        }
    }

    /// A flag stored: `{}` to its reporter, and the flag to the push sink (§16).
    mutating func flagCommitted(_ requester: Requester, _ outcome: WriteOutcome) -> [EngineEffect] {
        guard case .committed(.flag(let flag)) = outcome else {
            return [.reply(requester, .failure(ChatError(.internalError, "storage failed; retry")))]
        }
        return [.reply(requester, .result(Self.emptyObject)), .pushFlag(flag)]
    }

    /// A ban's (or a channel mute's) end came: if it is still on record and over, it is
    /// lifted like an unban by the backend (written, replicated, told to those who moderate)
    /// or an unmute by its member. In a cluster every node asks; the first lift commits and
    /// the others find nothing to lift.
    public mutating func banDue(channel channelID: ChannelID?, user: UserID, now: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        if let channelID, let until = directory.channels[channelID]?.mutes[user]?.untilMs {
            if until <= now {
                effects += changeChannel(.mute(channelID, nil), by: user, for: .expiry, now: now)
            } else {
                effects.append(Self.banCheck(channel: channelID, user: user, until: until, now: now))
            }
        }
        let until = channelID.map { directory.channels[$0]?.bans[user]?.untilMs } ?? directory.users[user]?.ban?.untilMs
        guard let until else { return effects }
        guard until <= now else { return effects + [Self.banCheck(channel: channelID, user: user, until: until, now: now)] }
        if let channelID { return effects + changeChannel(.unban(channelID, user), by: "", for: .expiry, now: now) }
        return effects + changeUser(user, .ban(nil), for: .expiry, now: now)
    }

    /// Longest wait before a ban's end is looked at again (a ban may last for years).
    static let maxBanCheckMilliseconds: Milliseconds = 86_400_000

    static func banCheck(channel: ChannelID?, user: UserID, until: Milliseconds, now: Milliseconds) -> EngineEffect {
        .checkBanLater(channel: channel, user: user, afterMilliseconds: min(max(0, until - now), maxBanCheckMilliseconds))
    }

    /// Every ban on record with an end (at start-up): when to check each.
    public func banExpiries(now: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for channel in directory.channels.values {
            for (user, ban) in channel.bans {
                if let until = ban.untilMs { effects.append(Self.banCheck(channel: channel.id, user: user, until: until, now: now)) }
            }
            for (user, mute) in channel.mutes where channel.bans[user]?.untilMs == nil {
                if let until = mute.untilMs { effects.append(Self.banCheck(channel: channel.id, user: user, until: until, now: now)) }
            }
        }
        for user in directory.users.values {
            if let until = user.ban?.untilMs { effects.append(Self.banCheck(channel: nil, user: user.id, until: until, now: now)) }
        }
        return effects
    }

    /// The ends of bans and mutes a channel write set (new or changed against `before`).
    func banEndChecks(_ channel: Channel, before: Channel?, now: Milliseconds) -> [EngineEffect] {
        var checks: [EngineEffect] = channel.bans.compactMap { user, ban in
            guard let until = ban.untilMs, before?.bans[user] != ban else { return nil }
            return Self.banCheck(channel: channel.id, user: user, until: until, now: now)
        }
        for (user, mute) in channel.mutes {
            guard let until = mute.untilMs, before?.mutes[user] != mute else { continue }
            checks.append(Self.banCheck(channel: channel.id, user: user, until: until, now: now))
        }
        return checks
    }

    /// Remembers an accepted send of a member in a slow-mode channel, dropping entries no
    /// slow mode can still refuse once the table grows.
    mutating func recordSlowModeSend(_ key: SlowModeKey, at now: Milliseconds) {
        slowModeSends[key] = now
        guard slowModeSends.count > Self.slowModeTableBound else { return }
        let horizon = now - Milliseconds(Self.maxSlowModeSeconds) * 1000
        slowModeSends = slowModeSends.filter { $0.value > horizon }
    }
}
