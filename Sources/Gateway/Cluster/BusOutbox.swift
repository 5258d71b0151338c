import ChatCore

/// Events this node committed but could not put on the bus (its publish connection was
/// down, or a PUBLISH failed) while the other nodes may well have stayed subscribed:
/// published again, in their order, as soon as the connection is back, so the other nodes
/// apply a block, a membership change or a message late rather than never (messages they
/// already have are dropped by their `seq`; the other writes are idempotent).
///
/// Bounded in bytes (`capacityBytes`, payloads plus a per-entry overhead), not in events:
/// a message event carries the message twice and a channel event its member list, so a
/// count says little about memory. Past the bound the oldest events are dropped and
/// counted, and what they touched is remembered (`ResyncScope`): when the bus takes
/// events again, the other nodes are told to send `session.resync` for those channels
/// (everything, for a user or block write), and their clients read what was dropped from
/// history.
struct BusOutbox {
    static let defaultCapacityBytes = 64 << 20
    /// What an entry costs beyond its payload (the array slot, the scope).
    static let entryOverheadBytes = 64

    struct Entry {
        /// The Redis channel it goes on (`ClusterBus.topic(for:)`).
        var topic: String
        var payload: [UInt8]
        /// The event's number (`BusEvent.number`): copies of one event are told apart by it.
        var number: UInt64
        var scope: ResyncScope
        var cost: Int { payload.count + BusOutbox.entryOverheadBytes }
    }

    let capacityBytes: Int
    private var entries: [Entry] = []
    private var head = 0
    private(set) var byteCount = 0
    /// Events dropped since the outbox was last emptied by a publish.
    private(set) var dropped = 0
    /// What the dropped events touched, until `takeDroppedScope()`.
    private(set) var droppedScope = ResyncScope()

    init(capacityBytes: Int = BusOutbox.defaultCapacityBytes) {
        self.capacityBytes = capacityBytes
    }

    var count: Int { entries.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ payload: [UInt8], topic: String, number: UInt64 = 0, scope: ResyncScope) {
        entries.append(Entry(topic: topic, payload: payload, number: number, scope: scope))
        byteCount += entries[entries.count - 1].cost
        dropOldestPastCapacity()
        compactIfWasteful()
    }

    /// Everything waiting, oldest first; the outbox is empty after.
    mutating func takeAll() -> [Entry] {
        defer {
            entries.removeAll(keepingCapacity: false)
            head = 0
            byteCount = 0
        }
        return Array(entries[head...])
    }

    /// Entries taken and not published after all go back in front, in their order.
    mutating func putBack(_ failed: [Entry]) {
        guard !failed.isEmpty else { return }
        entries = failed + entries[head...]
        head = 0
        byteCount = entries.reduce(0) { $0 + $1.cost }
        dropOldestPastCapacity()
    }

    /// The channels whose events were dropped (and forgets them and the count).
    mutating func takeDroppedScope() -> (events: Int, scope: ResyncScope) {
        defer {
            dropped = 0
            droppedScope = ResyncScope()
        }
        return (dropped, droppedScope)
    }

    /// A resync notice that could not be published: its scope waits for the next round.
    mutating func keepDroppedScope(_ scope: ResyncScope, events: Int) {
        droppedScope.add(scope)
        dropped += events
    }

    private mutating func dropOldestPastCapacity() {
        // The newest entry stays even when it alone is over the bound.
        while byteCount > capacityBytes && count > 1 {
            let entry = entries[head]
            byteCount -= entry.cost
            droppedScope.add(entry.scope)
            dropped += 1
            head += 1
        }
    }

    private mutating func compactIfWasteful() {
        if head > 1_024 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}

/// Which live events a node's clients may have missed: some channels, or everything (a
/// user or block change touches every channel of the users involved). Bounded: past
/// `maxChannels` it becomes everything.
struct ResyncScope: Equatable {
    static let maxChannels = 10_000

    private(set) var everything = false
    private(set) var channels: Set<ChannelID> = []

    static let all: ResyncScope = {
        var scope = ResyncScope()
        scope.everything = true
        return scope
    }()

    static func channel(_ id: ChannelID) -> ResyncScope {
        var scope = ResyncScope()
        scope.channels = [id]
        return scope
    }

    /// What missing `write` makes a client miss.
    static func of(_ write: StoreWrite) -> ResyncScope {
        switch write {
        case .createChannel(let channel), .updateChannel(let channel): .channel(channel.id)
        case .insertMessage(let message): .channel(message.channelID)
        case .markRead(let channelID, _, _): .channel(channelID)
        case .changeMessage(let change): .channel(change.channelID)
        // Clients are not sent flags; the channel is the narrowest scope that covers the write.
        case .insertFlag(let flag): .channel(flag.channelID)
        case .upsertUser, .setUserDeactivated, .setBlock: .all
        }
    }

    var isEmpty: Bool { !everything && channels.isEmpty }

    mutating func add(_ other: ResyncScope) {
        guard !everything else { return }
        if other.everything || channels.count + other.channels.count > Self.maxChannels {
            everything = true
            channels = []
        } else {
            channels.formUnion(other.channels)
        }
    }
}
