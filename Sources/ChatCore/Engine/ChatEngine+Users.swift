/// What a user request changes in a profile.
public enum UserChange: Sendable, Equatable {
    /// `user.update` or the admin API's upsert: the fields given, the others kept.
    case profile(name: String?, image: String?, metadata: [String: String]?)
    /// The admin API's deactivation: live connections close (4002), new ones are refused.
    case deactivate
    /// `user.mute` / `user.unmute` of `ids` (existing users other than the user itself),
    /// answered per id with `refused` for the others (§16, like `user.block`).
    case mute(ids: [UserID], muted: Bool, refused: [UserID: String])
    /// The admin API's app-wide ban (nil: lifted). A plain ban closes live connections
    /// (4003) and refuses new ones; a shadow ban is never shown to its user.
    case ban(Ban?)

    func apply(to user: inout User) {
        switch self {
        case .profile(let name, let image, let metadata):
            if let name { user.name = name }
            if let image { user.image = image }
            if let metadata { user.metadata = metadata }
        case .deactivate:
            user.deactivated = true
        case .mute(let ids, let muted, _):
            for id in ids {
                if muted { user.mutedUsers.insert(id) } else { user.mutedUsers.remove(id) }
            }
        case .ban(let ban):
            user.ban = ban
        }
    }

    /// The per-id results of a mute request.
    var results: [UserID: String]? {
        guard case .mute(let ids, _, let refused) = self else { return nil }
        var results = refused
        for id in ids { results[id] = "success" }
        return results
    }
}

/// A user request waiting while that user's profile row is being written.
struct UserRequest: Sendable {
    var user: UserID
    var change: UserChange
    var requester: Requester
    var now: Milliseconds
}

/// A profile row write in flight: a request's change, or (nil) the row as memory holds it.
struct UserWrite: Sendable {
    var user: UserID
    var request: UserRequest?
}

/// Why the gateway closes a user's live sessions.
public enum SessionEnd: Sendable, Equatable {
    case deactivated
    /// An app-wide plain ban (§16, close 4003).
    case banned
}

/// A user's profile row is written one write at a time, so the store applies them in the
/// order memory saw them.
///
/// Requests (`user.update`, the admin API's upsert and deactivation) change memory only when
/// their write commits. What a connect learns from its token and `lastSeenAt` are applied to
/// memory at once (a connect does not wait for the store) and written in the background;
/// a background write that fails is written again on `retryUnsavedUsers` until it commits,
/// so memory and store agree in the end and a restart loses no user others saw.
extension ChatEngine {
    /// Changes `user`'s profile for `requester`: written, then applied and answered with the
    /// user as they see themselves. The admin API's upsert creates a missing user.
    public mutating func changeUser(_ user: UserID, _ change: UserChange, for requester: Requester,
                                    now: Milliseconds) -> [EngineEffect] {
        plan(UserRequest(user: user, change: change, requester: requester, now: now))
    }

    private mutating func plan(_ request: UserRequest) -> [EngineEffect] {
        if usersWriting.contains(request.user) {
            usersWaiting[request.user, default: []].append(request)
            return []
        }
        var row: User
        if let existing = directory.users[request.user] {
            row = existing
        } else if request.requester.session == nil, case .profile = request.change {
            row = User(id: request.user, createdAt: request.now)
        } else {
            return [.reply(request.requester, .failure(ChatError(.userNotFound, "no user \(request.user)")))]
        }
        request.change.apply(to: &row)
        return writeUser(row, UserWrite(user: request.user, request: request))
    }

    /// `user.mute` / `user.unmute` (§16): each id answered like `user.block`; the mutes are
    /// the user's own row, written like a profile change.
    public mutating func muteUsers(_ ids: [UserID], muted: Bool, by user: UserID, for requester: Requester,
                                   now: Milliseconds) -> [EngineEffect] {
        var valid: [UserID] = []
        var refused: [UserID: String] = [:]
        for id in ids {
            if id == user {
                refused[id] = ErrorCode.badRequest.rawValue
            } else if directory.users[id] == nil {
                refused[id] = ErrorCode.userNotFound.rawValue
            } else if !valid.contains(id) {
                valid.append(id)
            }
        }
        guard !valid.isEmpty else { return [.reply(requester, .blockResults(refused))] }
        return changeUser(user, .mute(ids: valid, muted: muted, refused: refused), for: requester, now: now)
    }

    /// Applies what a connect or a disconnect learned (the token's name and image, `lastSeenAt`)
    /// to memory now and writes the row in the background, behind any write in flight.
    public mutating func touchUser(_ user: User) -> [EngineEffect] {
        directory.upsert(user)
        guard !usersWriting.contains(user.id) else {
            usersDirty.insert(user.id)
            return []
        }
        return writeUser(user, UserWrite(user: user.id, request: nil))
    }

    /// Users read from the store that this node had not heard of (another node created them
    /// and its bus event is still on its way): known from now on; a user already known is kept
    /// as it is (what the bus brought is as new or newer).
    public mutating func usersLearned(_ users: [User]) {
        for user in users where directory.users[user.id] == nil { directory.upsert(user) }
    }

    /// Writes again every background row whose write failed.
    public mutating func retryUnsavedUsers() -> [EngineEffect] {
        let unsaved = usersUnsaved
        usersUnsaved = []
        var effects: [EngineEffect] = []
        for id in unsaved {
            guard let user = directory.users[id] else { continue }
            if usersWriting.contains(id) {
                usersDirty.insert(id)
            } else {
                effects += writeUser(user, UserWrite(user: id, request: nil))
            }
        }
        return effects
    }

    private mutating func writeUser(_ row: User, _ write: UserWrite) -> [EngineEffect] {
        let id = nextWriteID()
        usersWriting.insert(row.id)
        userWrites[id] = write
        return [.persist(id, .upsertUser(row))]
    }

    mutating func userCommitted(_ write: UserWrite, _ outcome: WriteOutcome) -> [EngineEffect] {
        let id = write.user
        usersWriting.remove(id)
        var effects: [EngineEffect] = []
        let committed = outcome != .failed
        if let request = write.request {
            if committed {
                // Onto the row as it is now: background changes made meanwhile are kept.
                var user = directory.users[id] ?? User(id: id, createdAt: request.now)
                request.change.apply(to: &user)
                directory.upsert(user)
                if request.change == .deactivate {
                    effects.append(.closeSessions(sessions.sessions(of: id), .deactivated))
                    effects.append(.reply(request.requester, .result(Self.emptyObject)))
                } else if case .ban(let ban) = request.change {
                    if let ban, !ban.shadow, ban.isInForce(at: request.now) {
                        effects.append(.closeSessions(sessions.sessions(of: id), .banned))
                    }
                    if let until = ban?.untilMs {
                        effects.append(Self.banCheck(channel: nil, user: id, until: until, now: request.now))
                    }
                    effects.append(.reply(request.requester, .result(Self.emptyObject)))
                } else if let results = request.change.results {
                    effects.append(.reply(request.requester, .blockResults(results)))
                } else {
                    effects.append(.reply(request.requester, .result(encode(userView(user, for: id)))))
                }
            } else {
                effects.append(.reply(request.requester, .failure(ChatError(.internalError, "storage failed; retry"))))
            }
        } else if committed {
            usersUnsaved.remove(id)
        } else {
            usersUnsaved.insert(id)
            effects.append(.userWritesFailed(usersUnsaved.count))
        }
        if usersDirty.remove(id) != nil, let user = directory.users[id] {
            // Background changes arrived while this write was in flight: write the row as it is now.
            effects += writeUser(user, UserWrite(user: id, request: nil))
        }
        if let waiting = usersWaiting.removeValue(forKey: id) {
            for request in waiting { effects += plan(request) }
        }
        return effects
    }

    /// How `viewer` sees `user` (PROTOCOL.md §3): online, and the block flags §5 allows;
    /// in strict mode a blocked pair sees each other's presence as never connected (§14).
    public func userView(_ user: User, for viewer: UserID) -> WireEncoding.UserView {
        let hidden = user.id != viewer && hidesPresence(of: user.id, from: viewer)
        var shown = user
        if hidden { shown.lastSeenAt = 0 }
        return WireEncoding.UserView(
            user: shown, online: !hidden && directory.isOnline(user.id),
            blockedByMe: directory.blocks.hasBlocked(viewer, user.id),
            hasBlockedMe: settings.revealBlockedBy ? directory.blocks.hasBlocked(user.id, viewer) : nil)
    }

    func encode(_ view: WireEncoding.UserView) -> [UInt8] {
        var w = JSONWriter()
        WireEncoding.write(view, to: &w)
        return w.bytes
    }
}
