/// One node of a Redis Cluster as `CLUSTER SLOTS` names it: where to connect, and the
/// node's id when the server gave one.
public struct RedisClusterNode: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var id: String?

    public init(host: String, port: Int, id: String? = nil) {
        self.host = host
        self.port = port
        self.id = id
    }

    /// Where the node is reached: what two entries for one node share (the id may be
    /// missing from one of them, a MOVED names no id).
    public var address: RedisClusterAddress { RedisClusterAddress(host: host, port: port) }

    public var description: String { address.description }
}

/// `host:port` of a cluster node, the key the client keeps its connections by.
public struct RedisClusterAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Which master serves which hash slot (sans-IO): read from a `CLUSTER SLOTS` reply,
/// corrected slot by slot by MOVED redirects until the next full read.
///
/// The reply comes from the network, so every value is checked: ranges within
/// 0...16383 and not overlapping, ports 1...65535, hosts IP addresses (the client never
/// resolves a name on its event loop). A reply that breaks this is an error, never a
/// trap. A node's host may be empty or null, which means "the node you asked" (a node
/// that does not know its own address); `?` (an unknown endpoint) is refused for a master
/// and such a replica left out.
public struct RedisClusterTopology: Sendable, Equatable {
    public struct SlotRange: Sendable, Equatable {
        public var slots: ClosedRange<Int>
        public var master: RedisClusterNode
        public var replicas: [RedisClusterNode]
    }

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The ranges as the server listed them, sorted by their first slot.
    public private(set) var ranges: [SlotRange]
    /// The distinct masters, in the order of their first slot (MOVED may add one).
    public private(set) var masters: [RedisClusterNode]
    /// For each slot, the index of its master in `masters`; -1 when no master serves it.
    private var owner: [Int16]

    /// A topology with no slot served (before anything was read).
    public init() {
        ranges = []
        masters = []
        owner = Array(repeating: -1, count: RedisClusterSlot.count)
    }

    /// Parses a `CLUSTER SLOTS` reply; `askedHost` stands in for a node whose host is empty.
    public static func parse(slotsReply reply: RedisReply, askedHost: String) throws(Failure) -> RedisClusterTopology {
        guard case .array(let entries) = reply else { throw Failure(description: "CLUSTER SLOTS: not an array (\(kind(reply)))") }
        var topology = RedisClusterTopology()
        for (number, entry) in entries.enumerated() {
            guard case .array(let fields) = entry, fields.count >= 3 else {
                throw Failure(description: "CLUSTER SLOTS entry \(number): not [start, end, master, replicas...]")
            }
            guard case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                  (0..<Int64(RedisClusterSlot.count)).contains(start), (0..<Int64(RedisClusterSlot.count)).contains(end),
                  start <= end else {
                throw Failure(description: "CLUSTER SLOTS entry \(number): the slot range is not within 0...16383")
            }
            let master = try node(fields[2], askedHost: askedHost, entry: number)
            guard master.host != "?" else {
                throw Failure(description: "CLUSTER SLOTS entry \(number): the master's address is unknown")
            }
            var replicas: [RedisClusterNode] = []
            for field in fields[3...] {
                let replica = try node(field, askedHost: askedHost, entry: number)
                if replica.host != "?" { replicas.append(replica) }
            }
            let slots = Int(start)...Int(end)
            guard topology.owner[slots].allSatisfy({ $0 == -1 }) else {
                throw Failure(description: "CLUSTER SLOTS entry \(number): slots \(slots) overlap an earlier entry")
            }
            let index = topology.index(of: master)
            guard let index else { throw Failure(description: "CLUSTER SLOTS: more masters than slots") }
            for slot in slots { topology.owner[slot] = index }
            topology.ranges.append(SlotRange(slots: slots, master: master, replicas: replicas))
        }
        topology.ranges.sort { $0.slots.lowerBound < $1.slots.lowerBound }
        return topology
    }

    /// The master serving `slot`; nil when none does (or `slot` is not a slot).
    public func master(forSlot slot: Int) -> RedisClusterNode? {
        guard (0..<RedisClusterSlot.count).contains(slot) else { return nil }
        let index = owner[slot]
        return index < 0 ? nil : masters[Int(index)]
    }

    /// Whether every slot has a master (`cluster_state:ok` as this client sees it).
    public var coversEverySlot: Bool { !owner.contains(-1) }

    /// How many slots the master at `address` serves in this topology.
    public func slotCount(of address: RedisClusterAddress) -> Int {
        guard let index = masters.firstIndex(where: { $0.address == address }) else { return 0 }
        return owner.reduce(0) { $1 == Int16(index) ? $0 + 1 : $0 }
    }

    /// A MOVED redirect: `slot` is served by `node` from now on (until the next full read).
    public mutating func assign(slot: Int, to node: RedisClusterNode) {
        guard (0..<RedisClusterSlot.count).contains(slot), let index = index(of: node) else { return }
        owner[slot] = index
    }

    /// The index of `node` in `masters` (by address), added when new; nil past Int16.
    private mutating func index(of node: RedisClusterNode) -> Int16? {
        if let existing = masters.firstIndex(where: { $0.address == node.address }) { return Int16(existing) }
        guard masters.count < RedisClusterSlot.count else { return nil }
        masters.append(node)
        return Int16(masters.count - 1)
    }

    /// `[host, port, id, ...]` (Redis 7 adds a map of other endpoints after the id).
    private static func node(_ reply: RedisReply, askedHost: String, entry: Int) throws(Failure) -> RedisClusterNode {
        guard case .array(let fields) = reply, fields.count >= 2 else {
            throw Failure(description: "CLUSTER SLOTS entry \(entry): a node is not [host, port, ...]")
        }
        var host: String
        switch fields[0] {
        case .null: host = askedHost
        case .string, .status:
            guard let text = fields[0].text else { throw Failure(description: "CLUSTER SLOTS entry \(entry): bad host") }
            host = text.isEmpty ? askedHost : text
        default:
            throw Failure(description: "CLUSTER SLOTS entry \(entry): a node's host is not a string")
        }
        guard host == "?" || RedisEndpoint.isIPAddress(host) else {
            throw Failure(description: "CLUSTER SLOTS entry \(entry): a node's host is not an IP address")
        }
        guard case .integer(let port) = fields[1], (1...65535).contains(port) else {
            throw Failure(description: "CLUSTER SLOTS entry \(entry): a node's port is not within 1...65535")
        }
        var id: String?
        if fields.count >= 3 {
            guard let text = fields[2].text, !text.isEmpty, text.utf8.count <= 64 else {
                throw Failure(description: "CLUSTER SLOTS entry \(entry): a node's id is not a short string")
            }
            id = text
        }
        return RedisClusterNode(host: host, port: Int(port), id: id)
    }

    private static func kind(_ reply: RedisReply) -> String {
        switch reply {
        case .error(let message): "error \(message.prefix(80))"
        case .disconnected: "disconnected"
        case .status, .string: "a string"
        case .integer: "an integer"
        case .null: "null"
        case .array: "an array"
        }
    }
}
