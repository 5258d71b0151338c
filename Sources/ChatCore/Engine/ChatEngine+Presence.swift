extension ChatEngine {
    /// `presence.subscribe` (PROTOCOL.md §14): the users' current state, and `user.presence`
    /// on each of their online/offline changes until unsubscribed or closed. In strict mode a
    /// blocked pair (either way) sees each other offline and gets no event.
    public mutating func presenceSubscribe(session: SessionID, user: UserID, to targets: [UserID]) throws(ChatError) -> [UInt8] {
        for target in targets where directory.users[target] == nil {
            throw ChatError(.userNotFound, "no user \(target)")
        }
        guard presence.subscribe(session, user: user, to: targets) else {
            throw ChatError(.badRequest, "at most \(PresenceSubscriptions.cap) presence subscriptions per connection")
        }
        var w = JSONWriter()
        w.beginObject()
        w.key("users")
        w.beginArray()
        var seen: Set<UserID> = []
        for target in targets where seen.insert(target).inserted {
            let hidden = hidesPresence(of: target, from: user)
            Self.writePresence(target, online: !hidden && directory.isOnline(target),
                               lastSeenAt: hidden ? 0 : directory.users[target]?.lastSeenAt ?? 0, to: &w)
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    public mutating func presenceUnsubscribe(session: SessionID, from targets: [UserID]) {
        presence.unsubscribe(session, from: targets)
    }

    /// The connection closed: its subscriptions end.
    public mutating func presenceSessionClosed(_ session: SessionID) {
        presence.remove(session)
    }

    /// `user` came online (its first live connection, on any node) or went offline (its
    /// last): the directory's view changes and the connections following it hear of it.
    public mutating func presenceChanged(_ user: UserID, online: Bool, at time: Milliseconds) -> [EngineEffect] {
        guard directory.isOnline(user) != online else { return [] }
        directory.setOnline(user, online)
        if var profile = directory.users[user], profile.lastSeenAt < time {
            profile.lastSeenAt = time
            directory.upsert(profile)
        }
        let sessions = presence.subscribers(of: user).filter { !hidesPresence(of: user, from: $0.user) }.map(\.session)
        guard !sessions.isEmpty else { return [] }
        let payload = WireEncoding.event("user.presence") { w in
            Self.writePresence(user, online: online, lastSeenAt: directory.users[user]?.lastSeenAt ?? time, to: &w)
        }
        return [.publishToSessions(sessions, payload: payload)]
    }

    /// Strict mode: a blocked pair, either way, sees each other as a user who never
    /// connected (offline, `lastSeenAt` 0), in presence and in every user view.
    func hidesPresence(of target: UserID, from viewer: UserID) -> Bool {
        settings.blockingMode == .strict
            && (directory.blocks.hasBlocked(viewer, target) || directory.blocks.hasBlocked(target, viewer))
    }

    private static func writePresence(_ user: UserID, online: Bool, lastSeenAt: Milliseconds, to w: inout JSONWriter) {
        w.beginObject()
        w.key("userId"); w.string(user)
        w.key("online"); w.bool(online)
        w.key("lastSeenAt"); w.int(lastSeenAt)
        w.endObject()
    }
}
