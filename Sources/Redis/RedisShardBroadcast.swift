/// Broadcast over sharded pub/sub (Redis Cluster) that keeps each master's order: an event
/// published on one shard channel of *every* master is, on each master, ahead of whatever
/// that master runs after it, so a subscriber that hears a master's channels on one
/// connection hears the event before anything published there later (on a single Redis,
/// one connection orders everything; across masters nothing does).
///
/// The channels: `channelCount` names, the i-th hashing into slots i·256 … i·256+255, so a
/// master that owns 256 consecutive slots owns at least one whatever the slot map. A
/// subscriber listens on all of them; a publisher picks one per master from its current
/// slot map (`channels(oneForEachMasterOf:)`). While slots move, a publisher's map may be
/// stale and a copy can land on another master than meant: the order holds again once the
/// maps agree. Receivers keep the first copy of each event (`RedisBroadcastCopies`).
public struct RedisShardBroadcast: Sendable {
    public static let channelCount = 64
    static let slotsPerChannel = RedisClusterSlot.count / channelCount

    /// Every channel, the i-th in the i-th block of slots.
    public let channels: [String]

    /// Channels named `prefix{tag}` with tags found by counting, so every node computes
    /// the same names.
    public init(prefix: String) {
        var names: [String] = []
        var candidate = 0
        var byBlock: [Int: String] = [:]
        while byBlock.count < Self.channelCount {
            let name = prefix + "{" + String(candidate) + "}"
            let block = RedisClusterSlot.slot(forKey: name) / Self.slotsPerChannel
            if byBlock[block] == nil { byBlock[block] = name }
            candidate += 1
        }
        for block in 0..<Self.channelCount { names.append(byBlock[block] ?? "") }
        channels = names
    }

    /// One channel per master of `topology` (its first in slot order), and the masters that
    /// own none of the channels' slots (a master holding fewer than 256 slots in every
    /// block): events reach those only through their own channels' neighbours, unordered.
    public func channels(oneForEachMasterOf topology: RedisClusterTopology) -> (channels: [String], uncovered: [RedisClusterNode]) {
        var chosen: [RedisClusterNode: String] = [:]
        for channel in channels {
            guard let master = topology.master(forSlot: RedisClusterSlot.slot(forKey: channel)) else { continue }
            if chosen[master] == nil { chosen[master] = channel }
        }
        let uncovered = topology.masters.filter { chosen[$0] == nil }
        return (topology.masters.compactMap { chosen[$0] }, uncovered)
    }
}

/// The first copy of each broadcast event, by (origin, number): an origin numbers its
/// events upwards; copies of one event arrive within moments of each other, on different
/// masters' connections and in any order across them. Numbers more than `window` below
/// the highest seen from an origin count as seen. At most `maxOrigins` origins are kept
/// (each run of a node is one): past that the one heard from least recently is forgotten.
public struct RedisBroadcastCopies: Sendable {
    public static let window: UInt64 = 4_096
    public static let maxOrigins = 1_024

    private struct Origin {
        var highest: UInt64 = 0
        var seen: Set<UInt64> = []
        var lastHeard: UInt64 = 0
    }

    private var origins: [String: Origin] = [:]
    private var clock: UInt64 = 0

    /// How many origins are remembered.
    public var originCount: Int { origins.count }

    public init() {}

    /// True the first time `number` from `origin` is offered, false for every later copy.
    public mutating func isFirst(origin: String, number: UInt64) -> Bool {
        clock += 1
        if origins[origin] == nil && origins.count >= Self.maxOrigins,
           let stalest = origins.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key {
            origins[stalest] = nil
        }
        var entry = origins[origin] ?? Origin()
        entry.lastHeard = clock
        defer { origins[origin] = entry }
        let floor = entry.highest > Self.window ? entry.highest - Self.window : 0
        if !entry.seen.isEmpty && number <= floor { return false }
        guard entry.seen.insert(number).inserted else { return false }
        if number > entry.highest {
            entry.highest = number
            if entry.seen.count > 2 * Int(Self.window) {
                let floor = entry.highest > Self.window ? entry.highest - Self.window : 0
                entry.seen = entry.seen.filter { $0 > floor }
            }
        }
        return true
    }
}
