/// Who blocked whom, both directions indexed.
public struct BlockGraph: Sendable, Equatable {
    /// blocker → users it blocked
    public private(set) var blockedBy: [UserID: Set<UserID>] = [:]
    /// blocked → users that blocked it
    public private(set) var blockers: [UserID: Set<UserID>] = [:]
    /// Moves on every change, so callers can cache what they derive from the graph.
    public private(set) var revision: UInt64 = 0

    public init() {}

    /// Equal when the same blocks hold, however they were reached.
    public static func == (lhs: BlockGraph, rhs: BlockGraph) -> Bool {
        lhs.blockedBy == rhs.blockedBy && lhs.blockers == rhs.blockers
    }

    public func hasBlocked(_ blocker: UserID, _ blocked: UserID) -> Bool {
        blockedBy[blocker]?.contains(blocked) ?? false
    }

    public func blocked(by blocker: UserID) -> Set<UserID> { blockedBy[blocker] ?? [] }

    public func blockers(of blocked: UserID) -> Set<UserID> { blockers[blocked] ?? [] }

    public mutating func block(_ blocker: UserID, _ blocked: UserID) {
        blockedBy[blocker, default: []].insert(blocked)
        blockers[blocked, default: []].insert(blocker)
        revision &+= 1
    }

    public mutating func unblock(_ blocker: UserID, _ blocked: UserID) {
        blockedBy.modifyValue(forKey: blocker) { $0.remove(blocked) }
        if blockedBy[blocker]?.isEmpty == true { blockedBy[blocker] = nil }
        blockers.modifyValue(forKey: blocked) { $0.remove(blocker) }
        if blockers[blocked]?.isEmpty == true { blockers[blocked] = nil }
        revision &+= 1
    }
}
