import Dispatch
import EventLoop

/// A client of a Redis Cluster on one of the gateway's event loops: a thin driver over
/// `RedisConnection`s, one per master for commands and, apart from them, one per master
/// for sharded pub/sub. The decisions are made by the sans-IO pieces: `RedisClusterSlot`
/// (key → slot), `RedisClusterTopology` (slot → master, read with `CLUSTER SLOTS`) and
/// `RedisRedirect` (MOVED/ASK).
///
/// Commands: `send` goes to the master of its key's slot (any master without a key) and
/// follows MOVED (the slot map is corrected at once and read again) and ASK (`ASKING`,
/// then the command, on the target, once), at most `maxRedirects` times. A command that
/// could not be sent because its node could not be reached waits for a fresh slot map and
/// is tried again (this counts as a redirect); once sent, a command is never sent again
/// when its connection is lost (it may have run): its caller gets `.disconnected`. Every
/// `reply` runs exactly once: the reply, Redis's error (the last redirect's when there
/// were too many), or `.disconnected`.
///
/// Sharded pub/sub: `ssubscribe`/`sunsubscribe` keep the set of channels wanted; each is
/// subscribed on the master of its slot (one SSUBSCRIBE per slot, as Redis requires).
/// `onMessage` gets each `smessage`, `onSubscribed` each confirmation. When channels stop
/// being heard — their master's subscription connection was lost, or their slot moved
/// (Redis's own `sunsubscribe` push, a MOVED for an SSUBSCRIBE, a new slot map) —
/// `onSubscriptionLost` says which (messages may have been missed: the caller resyncs),
/// and they are subscribed again where the fresh slot map puts them.
///
/// Ordering: on one master's connection, replies and pushes come in the order Redis ran
/// them, so commands on one slot (or one master) that were not redirected keep their
/// order, and so do the messages of one channel. Nothing is promised across masters, nor
/// for a command that had to wait (redirected, its node unreachable, no slot map yet): a
/// later command that went straight to the right node can overtake it.
///
/// The slot map is read again only when something says it changed (MOVED, a lost or
/// unreachable node, a slot with no master, a moved subscription), with the backoff of
/// `RedisClusterSettings`. Confined to its loop: create it and call every method there;
/// callbacks run there.
public final class RedisClusterClient: @unchecked Sendable {
    public let loop: EventLoop
    public let settings: RedisClusterSettings
    /// The slot map in use; nil until the first one was read.
    public private(set) var topology: RedisClusterTopology?

    /// An `smessage`: channel and payload.
    public var onMessage: ((String, [UInt8]) -> Void)?
    /// Redis confirmed the subscription of a channel (after `ssubscribe`, or again after a
    /// loss).
    public var onSubscribed: ((String) -> Void)?
    /// Channels that were subscribed and no longer are, and why; they are subscribed again
    /// once a master is known for them (`onSubscribed` then).
    public var onSubscriptionLost: (([String], String) -> Void)?
    /// A new slot map was read.
    public var onTopology: ((RedisClusterTopology) -> Void)?

    private struct Request {
        var arguments: [[UInt8]]
        var slot: Int?
        var reply: (RedisReply) -> Void
        var redirects = 0
        /// Send `ASKING` first (an ASK redirect).
        var asking = false
        /// The CLUSTER SLOTS of a refresh: goes to its node as is, never redirected.
        var probe = false
    }

    /// A connection to one node for commands; `waiting` holds what comes before it is ready.
    private final class Link {
        let id: UInt64
        var connection: RedisConnection?
        var ready = false
        var waiting: [Request] = []
        init(id: UInt64) { self.id = id }
    }

    /// A connection to one master for sharded pub/sub.
    private final class Subscriber {
        let id: UInt64
        var connection: RedisConnection?
        var ready = false
        /// Whether the connection has its handler (its first SSUBSCRIBE went out).
        var subscribed = false
        /// The channels placed here, sent or not.
        var channels: Set<String> = []
        /// Placed here before the connection was ready: sent once it is.
        var unsent: [String] = []
        /// SUNSUBSCRIBE confirmations still due per channel: any other `sunsubscribe` is Redis
        /// dropping the channel because its slot moved.
        var unsubscribing: [String: Int] = [:]
        init(id: UInt64) { self.id = id }
    }

    private var links: [RedisClusterAddress: Link] = [:]
    private var subscribers: [RedisClusterAddress: Subscriber] = [:]
    private var nextID: UInt64 = 0
    /// Commands waiting for a slot map that places them.
    private var unplaced: [Request] = []
    /// Channels wanted, and where each is placed (absent: waits for a master).
    private var wanted: Set<String> = []
    private var placement: [String: RedisClusterAddress] = [:]
    private var refreshing = false
    private var refreshScheduled = false
    private var lastRefreshStarted: UInt64 = 0
    private var backoff: Duration
    private var probeRotation = 0
    private var anyMasterRotation = 0
    private var closed = false
    private var onReady: ((String?) -> Void)?

    /// `settings.minimumBackoff`, at least 1 ms: a zero would let failures ask for the map
    /// in a tight loop.
    private var minimumBackoff: Duration { max(settings.minimumBackoff, .milliseconds(1)) }

    /// At most this many commands wait for a slot map; more get `.disconnected` at once.
    public static let maxUnplaced = 65_536

    /// Starts reading the slot map from the seeds. `ready` runs once: nil when the first
    /// map was read, else why no seed gave one (the client keeps trying with backoff;
    /// commands sent meanwhile fail at each failed round). Call on `loop`.
    public init(settings: RedisClusterSettings, loop: EventLoop, ready: @escaping (String?) -> Void) {
        self.settings = settings
        self.loop = loop
        backoff = max(settings.minimumBackoff, .milliseconds(1))
        onReady = ready
        // On the loop's next turn, so that `ready` never runs before this returns.
        loop.queue.async { [weak self] in self?.refresh() }
    }

    // MARK: commands

    /// Sends one command to the master of `key`'s slot (any master when nil); `reply` runs
    /// on the loop once, as the type's documentation says.
    public func send(_ arguments: [[UInt8]], key: [UInt8]?, reply: @escaping (RedisReply) -> Void) {
        guard !closed else {
            reply(.disconnected)
            return
        }
        route(Request(arguments: arguments, slot: key.map { RedisClusterSlot.slot(forKey: $0) }, reply: reply))
    }

    public func send(_ arguments: [String], key: String?, reply: @escaping (RedisReply) -> Void) {
        send(arguments.map { Array($0.utf8) }, key: key.map { Array($0.utf8) }, reply: reply)
    }

    /// SPUBLISH `payload` on `channel`, sent to the master of the channel's slot; the reply
    /// is the number of subscribers that node reached.
    public func spublish(_ channel: String, _ payload: [UInt8], reply: @escaping (RedisReply) -> Void) {
        send([Array("SPUBLISH".utf8), Array(channel.utf8), payload], key: Array(channel.utf8), reply: reply)
    }

    private func route(_ request: Request) {
        guard !closed else {
            request.reply(.disconnected)
            return
        }
        let master: RedisClusterNode?
        if let slot = request.slot {
            master = topology?.master(forSlot: slot)
        } else if let masters = topology?.masters, !masters.isEmpty {
            anyMasterRotation = (anyMasterRotation + 1) % masters.count
            master = masters[anyMasterRotation]
        } else {
            master = nil
        }
        guard let master else {
            wait(request)
            requestRefresh(after: topology == nil ? .zero : backoff)
            return
        }
        dispatch(request, to: master.address)
    }

    /// Keeps `request` until a slot map places it.
    private func wait(_ request: Request) {
        guard unplaced.count < Self.maxUnplaced else {
            request.reply(.disconnected)
            return
        }
        unplaced.append(request)
    }

    private func dispatch(_ request: Request, to address: RedisClusterAddress) {
        if links[address] == nil { openLink(address) }
        guard let link = links[address] else {
            unreachable([request], reason: "\(address): could not connect")
            return
        }
        guard link.ready, let connection = link.connection else {
            link.waiting.append(request)
            return
        }
        transmit(request, on: connection, address: address)
    }

    private func transmit(_ request: Request, on connection: RedisConnection, address: RedisClusterAddress) {
        if request.asking { connection.send([Array("ASKING".utf8)]) { _ in } }
        connection.send(request.arguments) { [weak self] reply in
            guard let self else {
                request.reply(reply)
                return
            }
            answered(request, reply, from: address)
        }
    }

    private func answered(_ request: Request, _ reply: RedisReply, from address: RedisClusterAddress) {
        guard !closed, !request.probe, let redirect = RedisRedirect(reply), request.redirects < settings.maxRedirects else {
            request.reply(reply)
            return
        }
        var next = request
        next.redirects += 1
        let target = redirect.address(sender: address)
        switch redirect.kind {
        case .moved:
            next.asking = false
            topology?.assign(slot: redirect.slot, to: RedisClusterNode(host: target.host, port: target.port))
            requestRefresh(after: .zero)
        case .ask:
            next.asking = true
        }
        dispatch(next, to: target)
    }

    /// Commands whose node could not be reached (never sent): each waits for a fresh slot
    /// map, or gets `.disconnected` past its redirects (a probe at once).
    private func unreachable(_ requests: [Request], reason: String) {
        for request in requests {
            if request.probe || closed || request.redirects >= settings.maxRedirects {
                request.reply(.disconnected)
            } else {
                var next = request
                next.redirects += 1
                next.asking = false
                wait(next)
            }
        }
        nodeFailed()
    }

    // MARK: command connections

    private func openLink(_ address: RedisClusterAddress) {
        nextID += 1
        let id = nextID
        let link = Link(id: id)
        links[address] = link
        let connection = RedisConnection(settings: settings.connection(to: address), loop: loop, connected: { [weak self] failure in
            self?.linkConnected(address, id: id, failure: failure)
        }, closed: { [weak self] reason in
            self?.linkClosed(address, id: id, reason: reason)
        })
        // A connection that failed at once has already told `linkConnected`.
        if links[address]?.id == id { link.connection = connection }
    }

    private func linkConnected(_ address: RedisClusterAddress, id: UInt64, failure: String?) {
        guard let link = links[address], link.id == id else { return }
        guard failure == nil, let connection = link.connection else {
            links[address] = nil
            unreachable(link.waiting, reason: failure ?? "\(address): could not connect")
            return
        }
        link.ready = true
        backoff = minimumBackoff
        let waiting = link.waiting
        link.waiting = []
        for request in waiting { transmit(request, on: connection, address: address) }
    }

    private func linkClosed(_ address: RedisClusterAddress, id: UInt64, reason: String?) {
        guard let link = links[address], link.id == id else { return }
        links[address] = nil
        // What was sent got `.disconnected` from the connection; nothing else waits on a ready link.
        unreachable(link.waiting, reason: reason ?? "\(address): closed")
    }

    /// Whether a command sent on any master's connection has waited for its reply longer
    /// than `nanoseconds` (a slow node, not yet past the command timeout).
    public func isWaiting(longerThan nanoseconds: UInt64) -> Bool {
        links.values.contains { $0.connection?.isWaiting(longerThan: nanoseconds) == true }
    }

    // MARK: sharded pub/sub

    /// Subscribes `channels` (SSUBSCRIBE on the master of each one's slot). Channels already
    /// wanted are left as they are. Call on `loop`.
    public func ssubscribe(_ channels: [String]) {
        guard !closed else { return }
        let new = channels.filter { wanted.insert($0).inserted }
        place(new)
    }

    /// Unsubscribes `channels` (SUNSUBSCRIBE where each is subscribed). From this call on,
    /// none of their messages is handed to `onMessage` (Redis may still send some that it
    /// published before it took the command: they are dropped here).
    public func sunsubscribe(_ channels: [String]) {
        guard !closed else { return }
        var sent: [RedisClusterAddress: [String]] = [:]
        for channel in channels where wanted.remove(channel) != nil {
            guard let address = placement.removeValue(forKey: channel), let subscriber = subscribers[address] else { continue }
            subscriber.channels.remove(channel)
            if let index = subscriber.unsent.firstIndex(of: channel) {
                subscriber.unsent.remove(at: index)
            } else {
                sent[address, default: []].append(channel)
            }
        }
        for (address, channels) in sent {
            guard let subscriber = subscribers[address], let connection = subscriber.connection else { continue }
            for group in Self.bySlot(channels) {
                for channel in group { subscriber.unsubscribing[channel, default: 0] += 1 }
                connection.unsubscribe(group, sharded: true)
            }
        }
    }

    /// Drops every subscription connection (one that stopped delivering): their channels
    /// are reported lost and subscribed again on fresh connections.
    public func abandonSubscriptions(_ reason: String) {
        for subscriber in subscribers.values { subscriber.connection?.abandon(reason) }
    }

    /// The channels wanted and subscribed, or sent and waiting for their confirmation.
    public var subscribedChannels: Set<String> { Set(placement.keys) }

    /// Places every wanted channel in `channels` that has no master yet on the master of
    /// its slot, opening that master's subscription connection when needed.
    private func place(_ channels: [String]) {
        guard let topology else {
            requestRefresh(after: .zero)
            return
        }
        var byMaster: [(RedisClusterAddress, [String])] = []
        var masterless = false
        for channel in channels where wanted.contains(channel) && placement[channel] == nil {
            guard let master = topology.master(forSlot: RedisClusterSlot.slot(forChannel: channel)) else {
                masterless = true
                continue
            }
            if let index = byMaster.firstIndex(where: { $0.0 == master.address }) {
                byMaster[index].1.append(channel)
            } else {
                byMaster.append((master.address, [channel]))
            }
        }
        for (address, channels) in byMaster {
            if subscribers[address] == nil { openSubscriber(address) }
            guard let subscriber = subscribers[address] else {
                masterless = true
                continue
            }
            for channel in channels {
                placement[channel] = address
                subscriber.channels.insert(channel)
            }
            if subscriber.ready {
                transmitSubscribe(channels, on: subscriber, address: address)
            } else {
                subscriber.unsent += channels
            }
        }
        if masterless { requestRefresh(after: backoff) }
    }

    private func transmitSubscribe(_ channels: [String], on subscriber: Subscriber, address: RedisClusterAddress) {
        guard let connection = subscriber.connection else { return }
        let id = subscriber.id
        for group in Self.bySlot(channels) {
            if subscriber.subscribed {
                connection.subscribe(more: group, sharded: true)
            } else {
                subscriber.subscribed = true
                connection.subscribe(group, sharded: true) { [weak self] reply in
                    self?.pushed(reply, address: address, id: id)
                }
            }
        }
    }

    /// `channels` grouped by slot, in the order each slot first appears.
    private static func bySlot(_ channels: [String]) -> [[String]] {
        var groups: [[String]] = []
        var index: [Int: Int] = [:]
        for channel in channels {
            let slot = RedisClusterSlot.slot(forChannel: channel)
            if let at = index[slot] {
                groups[at].append(channel)
            } else {
                index[slot] = groups.count
                groups.append([channel])
            }
        }
        return groups
    }

    private func openSubscriber(_ address: RedisClusterAddress) {
        nextID += 1
        let id = nextID
        let subscriber = Subscriber(id: id)
        subscribers[address] = subscriber
        let connection = RedisConnection(settings: settings.connection(to: address), loop: loop, connected: { [weak self] failure in
            self?.subscriberConnected(address, id: id, failure: failure)
        }, closed: { [weak self] reason in
            self?.subscriberLost(address, id: id, reason: reason ?? "\(address): closed")
        })
        if subscribers[address]?.id == id { subscriber.connection = connection }
    }

    private func subscriberConnected(_ address: RedisClusterAddress, id: UInt64, failure: String?) {
        guard let subscriber = subscribers[address], subscriber.id == id else { return }
        guard failure == nil else {
            subscriberLost(address, id: id, reason: failure ?? "")
            return
        }
        subscriber.ready = true
        backoff = minimumBackoff
        let unsent = subscriber.unsent
        subscriber.unsent = []
        transmitSubscribe(unsent, on: subscriber, address: address)
    }

    /// A push, confirmation or refusal on the subscription connection of `address`.
    private func pushed(_ reply: RedisReply, address: RedisClusterAddress, id: UInt64) {
        guard !closed, let subscriber = subscribers[address], subscriber.id == id else { return }
        switch reply {
        case .array(let parts) where parts.count == 3:
            guard let kind = parts[0].text?.lowercased(), let channel = parts[1].text else { return }
            switch kind {
            case "smessage":
                guard case .string(let payload) = parts[2], subscriber.channels.contains(channel) else { return }
                onMessage?(channel, payload)
            case "ssubscribe":
                if subscriber.channels.contains(channel) { onSubscribed?(channel) }
            case "sunsubscribe":
                if let due = subscriber.unsubscribing[channel] {
                    subscriber.unsubscribing[channel] = due > 1 ? due - 1 : nil
                } else if subscriber.channels.remove(channel) != nil {
                    // Redis dropped it: its slot is served elsewhere now.
                    placement[channel] = nil
                    onSubscriptionLost?([channel], "\(address): the channel's slot moved")
                    requestRefresh(after: .zero)
                }
            default:
                break
            }
        case .error(let message):
            if let redirect = RedisRedirect(message: message), redirect.kind == .moved {
                // A refused SSUBSCRIBE: that slot's channels are not subscribed here.
                let target = redirect.address(sender: address)
                topology?.assign(slot: redirect.slot, to: RedisClusterNode(host: target.host, port: target.port))
                let refused = subscriber.channels.filter { RedisClusterSlot.slot(forChannel: $0) == redirect.slot }
                for channel in refused {
                    subscriber.channels.remove(channel)
                    placement[channel] = nil
                }
                requestRefresh(after: .zero)
            } else {
                // Nothing else is expected: start this master's subscription over.
                subscriber.connection?.abandon("SSUBSCRIBE refused: \(message.prefix(200))")
            }
        default:
            break  // `.disconnected` comes with the connection's `closed`.
        }
    }

    private func subscriberLost(_ address: RedisClusterAddress, id: UInt64, reason: String) {
        guard let subscriber = subscribers[address], subscriber.id == id else { return }
        subscribers[address] = nil
        let channels = subscriber.channels.sorted()
        for channel in channels { placement[channel] = nil }
        if subscriber.ready, !channels.isEmpty, !closed { onSubscriptionLost?(channels, reason) }
        nodeFailed()
    }

    // MARK: the slot map

    /// A node was lost or could not be reached: read the map again, after a growing wait.
    private func nodeFailed() {
        guard !closed else { return }
        requestRefresh(after: backoff)
        backoff = backoff >= settings.maximumBackoff / 2 ? settings.maximumBackoff : max(backoff * 2, minimumBackoff)
    }

    private func requestRefresh(after delay: Duration) {
        guard !closed, !refreshing, !refreshScheduled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let earliest = lastRefreshStarted == 0 ? now : lastRefreshStarted + minimumBackoff.nanoseconds
        let due = max(now + delay.nanoseconds, earliest)
        guard due > now else {
            refresh()
            return
        }
        refreshScheduled = true
        loop.queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due)) { [weak self] in
            guard let self else { return }
            refreshScheduled = false
            refresh()
        }
    }

    /// Asks the known masters, then the seeds, for `CLUSTER SLOTS`, one after another until
    /// one gives a valid map. Starts at a different node each round, so that one dead node
    /// does not hold every round up.
    private func refresh() {
        guard !closed, !refreshing else { return }
        refreshing = true
        lastRefreshStarted = DispatchTime.now().uptimeNanoseconds
        var candidates: [RedisClusterAddress] = topology?.masters.map(\.address) ?? []
        for seed in settings.seeds {
            let address = RedisClusterAddress(host: seed.host, port: seed.port)
            if !candidates.contains(address) { candidates.append(address) }
        }
        if !candidates.isEmpty {
            probeRotation = (probeRotation + 1) % candidates.count
            candidates = Array(candidates[probeRotation...] + candidates[..<probeRotation])
        }
        probe(candidates, at: 0, failure: nil)
    }

    private func probe(_ candidates: [RedisClusterAddress], at index: Int, failure: String?) {
        guard !closed else { return }
        guard index < candidates.count else {
            refreshFailed(failure ?? "no seed node")
            return
        }
        let address = candidates[index]
        let request = Request(arguments: [Array("CLUSTER".utf8), Array("SLOTS".utf8)], slot: nil, reply: { [weak self] reply in
            guard let self, !closed else { return }
            do throws(RedisClusterTopology.Failure) {
                let topology = try RedisClusterTopology.parse(slotsReply: reply, askedHost: address.host)
                guard !topology.masters.isEmpty else { throw RedisClusterTopology.Failure(description: "no slot is served") }
                install(topology)
            } catch {
                probe(candidates, at: index + 1, failure: "\(address): \(error)")
            }
        }, probe: true)
        dispatch(request, to: address)
    }

    private func refreshFailed(_ reason: String) {
        refreshing = false
        let waiting = unplaced
        unplaced = []
        for request in waiting { request.reply(.disconnected) }
        if let ready = onReady {
            onReady = nil
            ready("no Redis Cluster node gave its slot map: \(reason)")
        }
        nodeFailed()
    }

    private func install(_ fresh: RedisClusterTopology) {
        refreshing = false
        topology = fresh
        let masters = Set(fresh.masters.map(\.address))
        // Connections to nodes that serve no slot any more (a failed-over master back as a replica).
        for (address, link) in links where !masters.contains(address) {
            links[address] = nil
            unreachable(link.waiting, reason: "\(address): no longer a master")
            link.connection?.close()
        }
        for (address, subscriber) in subscribers where !masters.contains(address) {
            subscribers[address] = nil
            let channels = subscriber.channels.sorted()
            for channel in channels { placement[channel] = nil }
            if subscriber.ready, !channels.isEmpty { onSubscriptionLost?(channels, "\(address): no longer a master") }
            subscriber.connection?.close()
        }
        // Channels subscribed where their slot no longer is: Redis drops them there (its own
        // `sunsubscribe`); this client no longer counts on it.
        var moved: [RedisClusterAddress: [String]] = [:]
        for (channel, address) in placement where fresh.master(forSlot: RedisClusterSlot.slot(forChannel: channel))?.address != address {
            moved[address, default: []].append(channel)
        }
        for (address, channels) in moved {
            guard let subscriber = subscribers[address] else { continue }
            var sent: [String] = []
            for channel in channels {
                placement[channel] = nil
                subscriber.channels.remove(channel)
                if let index = subscriber.unsent.firstIndex(of: channel) {
                    subscriber.unsent.remove(at: index)
                } else {
                    sent.append(channel)
                }
            }
            if let connection = subscriber.connection, subscriber.ready {
                for group in Self.bySlot(sent) {
                    for channel in group { subscriber.unsubscribing[channel, default: 0] += 1 }
                    connection.unsubscribe(group, sharded: true)
                }
            }
            if !sent.isEmpty { onSubscriptionLost?(sent.sorted(), "\(address): the channels' slots moved") }
        }
        onTopology?(fresh)
        if let ready = onReady {
            onReady = nil
            ready(nil)
        }
        let waiting = unplaced
        unplaced = []
        for request in waiting { route(request) }
        place(wanted.sorted())
        if !fresh.coversEverySlot { requestRefresh(after: backoff) }
    }

    // MARK: ending

    /// Closes every connection: commands already sent still get their replies (redirects
    /// are no longer followed: the caller gets the MOVED or ASK error), the others
    /// `.disconnected`; subscriptions end without `onSubscriptionLost`.
    public func close() {
        guard !closed else { return }
        closed = true
        let waiting = unplaced
        unplaced = []
        let links = self.links
        self.links = [:]
        let subscribers = self.subscribers
        self.subscribers = [:]
        placement = [:]
        wanted = []
        for request in waiting { request.reply(.disconnected) }
        for link in links.values {
            let waiting = link.waiting
            link.waiting = []
            for request in waiting { request.reply(.disconnected) }
            link.connection?.close()
        }
        for subscriber in subscribers.values { subscriber.connection?.close() }
        if let ready = onReady {
            onReady = nil
            ready("closed")
        }
    }
}
