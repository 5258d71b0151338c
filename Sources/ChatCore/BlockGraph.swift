/// Who blocked whom, both directions indexed.
public struct BlockGraph: Sendable, Equatable {
    /// blocker → users it blocked
    public private(set) var blockedBy: [UserID: Set<UserID>] = [:]
    /// blocked → users that blocked it
    public private(set) var blockers: [UserID: Set<UserID>] = [:]

    public init() {}

    public func hasBlocked(_ blocker: UserID, _ blocked: UserID) -> Bool {
        blockedBy[blocker]?.contains(blocked) ?? false
    }

    public func blocked(by blocker: UserID) -> Set<UserID> { blockedBy[blocker] ?? [] }

    public func blockers(of blocked: UserID) -> Set<UserID> { blockers[blocked] ?? [] }

    public mutating func block(_ blocker: UserID, _ blocked: UserID) {
        blockedBy[blocker, default: []].insert(blocked)
        blockers[blocked, default: []].insert(blocker)
    }

    public mutating func unblock(_ blocker: UserID, _ blocked: UserID) {
        blockedBy[blocker]?.remove(blocked)
        if blockedBy[blocker]?.isEmpty == true { blockedBy[blocker] = nil }
        blockers[blocked]?.remove(blocker)
        if blockers[blocked]?.isEmpty == true { blockers[blocked] = nil }
    }
}
