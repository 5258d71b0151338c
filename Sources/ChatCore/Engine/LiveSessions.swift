/// The live connections the engine admitted, by user: the count the per-user connection cap
/// is judged against, whom a user's `closeSessions` reaches, and who hears a resync.
struct LiveSessions: Sendable {
    private var byUser: [UserID: [SessionID]] = [:]
    private var owners: [SessionID: UserID] = [:]
    /// Sessions opened with `hideBlocked=1` (§5).
    private var hidingBlocked: Set<SessionID> = []

    func count(of user: UserID) -> Int { byUser[user]?.count ?? 0 }

    func user(of session: SessionID) -> UserID? { owners[session] }

    func sessions(of user: UserID) -> [SessionID] { byUser[user] ?? [] }

    /// Users with at least one live connection here.
    var users: Dictionary<UserID, [SessionID]>.Keys { byUser.keys }

    mutating func add(_ session: SessionID, of user: UserID, hideBlocked: Bool = false) {
        byUser[user, default: []].append(session)
        owners[session] = user
        if hideBlocked { hidingBlocked.insert(session) }
    }

    func hidesBlocked(_ session: SessionID) -> Bool { hidingBlocked.contains(session) }

    /// Forgets `session`; its user, or nil for a session never admitted (or already gone).
    mutating func remove(_ session: SessionID) -> UserID? {
        guard let user = owners.removeValue(forKey: session) else { return nil }
        hidingBlocked.remove(session)
        byUser[user]?.removeAll { $0 == session }
        if byUser[user]?.isEmpty == true { byUser[user] = nil }
        return user
    }
}
