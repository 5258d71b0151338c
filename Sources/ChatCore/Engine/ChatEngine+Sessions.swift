/// Live sessions: who may connect, what a new session starts with, what a closed one
/// changes (the user's `lastSeenAt` and presence), and who hears a resync.
extension ChatEngine {
    /// A verified connection asks to become a session: refused when the user is deactivated
    /// or already holds `maxConnectionsPerUser` connections here; otherwise the token's
    /// profile and the time are kept (and written in the background), the user comes online
    /// unless the cluster announces it, and `.sessionOpened` carries the session's seed,
    /// after every effect its admission caused.
    public mutating func openSession(_ request: SessionRequest, now: Milliseconds) -> [EngineEffect] {
        if directory.users[request.user]?.deactivated == true {
            return [.sessionRefused(request.id, .deactivated)]
        }
        if let ban = directory.users[request.user]?.ban, !ban.shadow, ban.isInForce(at: now) {
            return [.sessionRefused(request.id, .banned)]
        }
        let live = sessions.count(of: request.user)
        if live >= settings.maxConnectionsPerUser {
            return [.sessionRefused(request.id, .tooManyConnections(live: live))]
        }
        var user = directory.users[request.user] ?? User(id: request.user, createdAt: now)
        if let name = request.name { user.name = name }
        if let image = request.image { user.image = image }
        user.lastSeenAt = now
        var effects = touchUser(user)
        sessions.add(request.id, of: user.id, hideBlocked: request.hideBlocked)
        if !request.presenceOnBus { effects += presenceChanged(user.id, online: true, at: now) }
        // In a cluster a session opens once its channels are read (`ChatEngine+Following`).
        if followChannels(ofNewSession: request.id, user: user.id, into: &effects) { return effects }
        effects.append(.sessionOpened(request.id, seed(for: user.id)))
        return effects
    }

    /// What a new session of `user` starts with: its number, channels and block sets.
    mutating func seed(for user: UserID) -> SessionSeed {
        SessionSeed(userNumber: number(for: user), channels: directory.channelIDs(of: user),
                    blocked: Set(directory.blocks.blocked(by: user).map { number(for: $0) }),
                    blockedBy: Set(directory.blocks.blockers(of: user).map { number(for: $0) }))
    }

    /// A session's connection is gone: its presence subscriptions end; when it was its user's
    /// last here, the user's `lastSeenAt` is kept and (unless the cluster announces it) the
    /// user goes offline. Nothing for a session the engine never admitted.
    public mutating func closeSession(_ session: SessionID, now: Milliseconds, presenceOnBus: Bool = false) -> [EngineEffect] {
        presence.remove(session)
        guard let user = sessions.remove(session) else { return [] }
        var effects = unfollowChannels(ofClosedSession: session, user: user, now: now)
        guard sessions.count(of: user) == 0 else { return effects }
        if var profile = directory.users[user] {
            profile.lastSeenAt = now
            effects += touchUser(profile)
        }
        if !presenceOnBus { effects += presenceChanged(user, online: false, at: now) }
        return effects
    }

    /// Cluster mode, when the shared connection set could not say whether `user` still has
    /// a connection on some node: offline if it has none here.
    public mutating func presenceUnconfirmed(_ user: UserID, at time: Milliseconds) -> [EngineEffect] {
        sessions.count(of: user) == 0 ? presenceChanged(user, online: false, at: time) : []
    }

    /// The users with a live connection on any node, read when the cluster's presence feed
    /// (re)started: whoever changed meanwhile is announced now, offline first.
    public mutating func presenceSnapshot(online: Set<UserID>, at now: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for user in directory.onlineUsers.subtracting(online).sorted() {
            effects += presenceChanged(user, online: false, at: now)
        }
        for user in online.subtracting(directory.onlineUsers).sorted() {
            effects += presenceChanged(user, online: true, at: now)
        }
        return effects
    }

    /// `session.resync` to every live session here, naming those of its user's channels that
    /// `affected` selects (a user with none hears nothing).
    public func resync(_ affected: (ChannelID) -> Bool) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for user in sessions.users.sorted() {
            let channels = directory.channelIDs(of: user).filter(affected).sorted()
            guard !channels.isEmpty else { continue }
            let payload = WireEncoding.event("session.resync") { w in
                w.beginObject()
                w.key("channelIds")
                w.beginArray()
                for channel in channels { w.string(channel) }
                w.endArray()
                w.endObject()
            }
            effects.append(.publishToUsers([user], payload: payload, excluding: nil))
        }
        return effects
    }

    /// The live sessions of `user` here.
    public func sessions(of user: UserID) -> [SessionID] { sessions.sessions(of: user) }

    /// Whether the directory holds `user` (a user another node created may not be here yet).
    public func knows(_ user: UserID) -> Bool { directory.users[user] != nil }
}
