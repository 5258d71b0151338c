/// The engine's copy of the messages being changed or viewed live (§15): each with who
/// reacted and replied, so a change is judged and each viewer's counts computed without a
/// read per event. Loaded from the store on first use (`readMessageStates`); kept current
/// by the changes this node applies, in the order it applies them; dropped when a change
/// arrives that does not follow the copy (another node's change this node missed), so the
/// next use reads it again. Bounded: past `capacity` entries (reactions and reply tallies
/// included) the least recently used half goes.
struct MessageStates: Sendable {
    struct Key: Hashable, Sendable {
        var channel: ChannelID
        var seq: Int64
    }

    private struct Entry: Sendable {
        var state: MessageState
        var lastUse: UInt64

        mutating func update(_ body: (inout MessageState) -> Void) { body(&state) }
    }

    private var entries: [Key: Entry] = [:]
    private var weight = 0
    private var clock: UInt64 = 0
    let capacity: Int
    /// Reads on their way, by read, and the keys each is for.
    private(set) var loading: [WriteID: [Key]] = [:]
    private var loadingKeys: Set<Key> = []

    init(capacity: Int = 500_000) {
        self.capacity = capacity
    }

    var count: Int { entries.count }

    mutating func state(_ key: Key) -> MessageState? {
        guard entries[key] != nil else { return nil }
        clock &+= 1
        entries[key]?.lastUse = clock
        return entries[key]?.state
    }

    func peek(_ key: Key) -> MessageState? { entries[key]?.state }

    func contains(_ key: Key) -> Bool { entries[key] != nil }

    /// Changes the copy of `key` in place (a message with a thousand reactors is not copied
    /// per reaction); false when there is none.
    mutating func update(_ key: Key, _ body: (inout MessageState) -> Void) -> Bool {
        guard let before = entries[key]?.state.weight else { return false }
        clock &+= 1
        entries[key]?.lastUse = clock
        entries.modifyValue(forKey: key) { $0.update(body) }
        weight += (entries[key]?.state.weight ?? before) - before
        if weight > capacity { evictOldestHalf() }
        return true
    }

    mutating func store(_ state: MessageState) {
        let key = Key(channel: state.message.channelID, seq: state.message.seq)
        clock &+= 1
        if let old = entries[key] { weight -= old.state.weight }
        entries[key] = Entry(state: state, lastUse: clock)
        weight += state.weight
        if weight > capacity { evictOldestHalf() }
    }

    mutating func drop(_ key: Key) {
        guard let old = entries.removeValue(forKey: key) else { return }
        weight -= old.state.weight
    }

    mutating func dropChannel(_ channel: ChannelID) {
        for key in entries.keys where key.channel == channel { drop(key) }
    }

    /// Whether a read for `key` is on its way.
    func isLoading(_ key: Key) -> Bool { loadingKeys.contains(key) }

    /// Records a read of `keys` (of one channel); the keys not already on their way.
    mutating func startLoading(_ read: WriteID, _ keys: [Key]) -> [Key] {
        let fresh = keys.filter { !loadingKeys.contains($0) && entries[$0] == nil }
        guard !fresh.isEmpty else { return [] }
        loading[read] = fresh
        loadingKeys.formUnion(fresh)
        return fresh
    }

    /// The read finished: the keys it was for (the states it found are stored by the caller).
    mutating func finishLoading(_ read: WriteID) -> [Key]? {
        guard let keys = loading.removeValue(forKey: read) else { return nil }
        loadingKeys.subtract(keys)
        return keys
    }

    private mutating func evictOldestHalf() {
        let sorted = entries.sorted { $0.value.lastUse < $1.value.lastUse }
        for (key, _) in sorted.prefix(max(1, sorted.count / 2)) { drop(key) }
    }
}
