/// Which connections follow which users' presence (PROTOCOL.md §14): per connection the
/// users it subscribed to (at most `cap`), and per user the connections to tell.
struct PresenceSubscriptions {
    static let cap = 1_000

    private var bySession: [SessionID: (user: UserID, targets: Set<UserID>)] = [:]
    private var byTarget: [UserID: Set<SessionID>] = [:]
    /// Subscriptions held by all connections together.
    private(set) var total = 0

    /// Adds `targets` to the session's subscriptions; false (nothing added) when that
    /// would take it past the cap.
    mutating func subscribe(_ session: SessionID, user: UserID, to targets: [UserID]) -> Bool {
        var entry = bySession[session] ?? (user, [])
        let added = Set(targets).subtracting(entry.targets)
        guard entry.targets.count + added.count <= Self.cap else { return false }
        entry.targets.formUnion(added)
        bySession[session] = entry
        for target in added { byTarget[target, default: []].insert(session) }
        total += added.count
        return true
    }

    mutating func unsubscribe(_ session: SessionID, from targets: [UserID]) {
        guard var entry = bySession[session] else { return }
        for target in targets where entry.targets.remove(target) != nil {
            total -= 1
            byTarget.modifyValue(forKey: target) { $0.remove(session) }
            if byTarget[target]?.isEmpty == true { byTarget[target] = nil }
        }
        bySession[session] = entry.targets.isEmpty ? nil : entry
    }

    /// The connection closed: all of its subscriptions end.
    mutating func remove(_ session: SessionID) {
        guard let entry = bySession[session] else { return }
        unsubscribe(session, from: Array(entry.targets))
    }

    /// The connections following `target`, with the user each belongs to.
    func subscribers(of target: UserID) -> [(session: SessionID, user: UserID)] {
        (byTarget[target] ?? []).sorted().compactMap { session in bySession[session].map { (session, $0.user) } }
    }

    func count(of session: SessionID) -> Int { bySession[session]?.targets.count ?? 0 }
}
