import Foundation
import Testing
@testable import ChatCore

/// Strict mode as a property (PROTOCOL.md §5, §14): random sequences of sends, blocks,
/// unblocks, read marks, typing and presence changes between alice, bob and carol, run
/// through the engine with an in-memory store and a fan-out that applies the documented
/// per-connection rule. After every step:
/// - while alice and bob are blocked (either way), nothing bob observes carries alice: no
///   event from her, no message of hers in history, counts or `lastMessage`, and her user
///   view and presence are those of a user who never connected (and the same the other way);
/// - for every viewer and channel, `unreadCount`, `lastMessage` and history agree.
@Suite("Strict mode property")
struct StrictModePropertyTests {
    /// The engine with everything around it: a store that assigns seqs, a fan-out, timers.
    struct World {
        static let users: [UserID] = ["alice", "bob", "carol"]
        static let sessions: [UserID: SessionID] = ["alice": 1, "bob": 2, "carol": 3]
        var engine: ChatEngine
        var channels: [ChannelID] = []
        var stored: [ChannelID: [Message]] = [:]
        /// What each session received (events and replies), as parsed JSON.
        var received: [SessionID: [JSONValue]] = [:]
        var timers: [(due: Milliseconds, fire: (inout ChatEngine, Milliseconds) -> [EngineEffect])] = []
        var now: Milliseconds = 1_000
        var lastReply: [SessionID: EngineReply] = [:]
        var online: Set<UserID> = []

        init() {
            var directory = ChatDirectory()
            for user in Self.users { directory.upsert(User(id: user, createdAt: 1)) }
            engine = ChatEngine(directory: directory, settings: ChatEngine.Settings(blockingMode: .strict, revealBlockedBy: false))
            for (type, members) in [(ChannelType.group, ["bob", "carol"]), (.group, ["bob"]), (.open, [])] as [(ChannelType, [UserID])] {
                let before = Set(engine.directory.channelIDs(of: "alice"))
                run(engine.changeChannel(.create(type: type, userIDs: members, name: nil, distinct: false, pushFromBlockedUsers: nil),
                                         by: "alice", for: .admin(1), now: now))
                guard let id = engine.directory.channelIDs(of: "alice").subtracting(before).first else { continue }
                channels.append(id)
                if type == .open {
                    for user in ["bob", "carol"] { run(engine.changeChannel(.join(id), by: user, for: .admin(2), now: now)) }
                }
            }
            // carol and bob have a channel of their own (alice is not in it).
            let before = Set(engine.directory.channelIDs(of: "bob"))
            run(engine.changeChannel(.create(type: .group, userIDs: ["carol"], name: nil, distinct: false, pushFromBlockedUsers: nil),
                                     by: "bob", for: .admin(3), now: now))
            if let id = engine.directory.channelIDs(of: "bob").subtracting(before).first { channels.append(id) }
        }

        func cut(_ a: UserID, _ b: UserID) -> Bool {
            engine.directory.blocks.hasBlocked(a, b) || engine.directory.blocks.hasBlocked(b, a)
        }

        mutating func run(_ effects: [EngineEffect]) {
            var queue = effects
            while !queue.isEmpty {
                let effect = queue.removeFirst()
                switch effect {
                case .persist(let id, let write):
                    var result = StoreWriteResult.done
                    if case .insertMessage(var message) = write {
                        message.seq = Int64((stored[message.channelID]?.count ?? 0) + 1)
                        stored[message.channelID, default: []].append(message)
                        result = .message(message)
                    }
                    queue += engine.committed(id, .committed(result), monotonicNow: now)
                case .reply(let requester, let reply):
                    if case .session(let session, _) = requester { lastReply[session] = reply }
                case .publishMessage(let channelID, let payload, let origin, let excluding):
                    guard let channel = engine.directory.channels[channelID] else { continue }
                    let sender = Self.users.first { engine.userNumbers[$0] == origin.sender } ?? ""
                    for member in channel.members {
                        guard let session = Self.sessions[member], session != excluding else { continue }
                        if let hidden = origin.hiddenFrom, engine.userNumbers[member] == hidden { continue }
                        let number = engine.userNumbers[member] ?? 0
                        if origin.related?.contains(number) == true {
                            let relation = engine.relation(sender: sender, recipient: member)
                            if !DeliveryPolicy.deliversLive(kind: origin.kind, mode: origin.mode, relation: relation, hideBlocked: false) {
                                continue
                            }
                        }
                        deliver(payload, to: session)
                    }
                case .publishToUsers(let users, let payload, let excluding):
                    for user in users { if let session = Self.sessions[user], session != excluding { deliver(payload, to: session) } }
                case .publishToSessions(let sessions, let payload):
                    for session in sessions { deliver(payload, to: session) }
                case .readHistory(let read, let channelID, let viewer, let before, let after, let limit, _):
                    let visible = (stored[channelID] ?? []).filter { $0.hiddenFrom != viewer }
                    var batch: [Message]
                    if let after {
                        batch = Array(visible.filter { $0.seq > after }.prefix(limit))
                    } else {
                        batch = Array(visible.filter { message in before.map { message.seq < $0 } ?? true }.suffix(limit))
                    }
                    queue += engine.historyRead(read, batch, monotonicNow: now)
                case .readAttributions(let read, _, _, _, _):
                    // No reactions or replies in this model: the page's counts are its totals.
                    queue += engine.attributionsRead(read, MessageAttributions())
                case .checkTypingLater(let channel, let user, let after):
                    timers.append((now + after, { engine, at in engine.typingDue(channel, user: user, monotonicNow: at) }))
                case .checkReadEventLater(let channel, let user, let after):
                    timers.append((now + after, { engine, at in engine.readEventDue(channel, user: user, monotonicNow: at) }))
                default:
                    continue
                }
            }
        }

        mutating func deliver(_ payload: [UInt8], to session: SessionID) {
            if let event = parseJSON(payload) { received[session, default: []].append(event) }
        }

        mutating func advance(by milliseconds: Milliseconds) {
            now += milliseconds
            let due = timers.filter { $0.due <= now }
            timers.removeAll { $0.due <= now }
            for timer in due { run(timer.fire(&engine, now)) }
        }

        /// A user's whole history of a channel, through the engine's own paging.
        mutating func history(of channel: ChannelID, for viewer: UserID) -> [JSONValue] {
            guard let session = Self.sessions[viewer] else { return [] }
            var messages: [JSONValue] = []
            var cursor: String?
            for _ in 0..<50 {
                run(engine.readHistory(channel, beforeSeq: nil, afterSeq: cursor == nil ? 0 : nil, limit: 100, cursor: cursor,
                                       by: viewer, hideBlocked: false, for: .session(session, requestID: .null)))
                guard case .result(let bytes)? = lastReply[session], let page = parseJSON(bytes) else { return messages }
                messages += page["messages"]?.arrayValue ?? []
                guard let next = page["next"]?.stringValue else { break }
                cursor = next
            }
            return messages
        }
    }

    /// Checks the invariants; returns what failed.
    static func violations(in world: inout World, step: String) -> [String] {
        var found: [String] = []
        let pairs: [(UserID, UserID)] = [("alice", "bob"), ("bob", "alice")]
        for (viewer, other) in pairs where world.cut(viewer, other) {
            let session = World.sessions[viewer] ?? 0
            // The events that carry another user's doing (a block's own `user.blocked` names its target).
            let carrying: Set<String> = ["message.new", "typing.start", "typing.stop", "channel.read", "user.presence"]
            for event in world.received[session] ?? [] where carrying.contains(event["event"]?.stringValue ?? "") {
                let data = event["data"]
                if data?["senderId"]?.stringValue == other || data?["userId"]?.stringValue == other {
                    found.append("\(step): \(viewer) received \(event["event"]?.stringValue ?? "?") of \(other)")
                }
            }
            if let view = try? world.engine.user(other, seenBy: viewer), let json = parseJSON(view) {
                if json["online"]?.boolValue != false || json["lastSeenAt"]?.int64Value != 0 {
                    found.append("\(step): \(viewer) sees \(other) as online \(json["online"]?.boolValue ?? false), lastSeenAt \(json["lastSeenAt"]?.int64Value ?? -1)")
                }
            }
        }
        for viewer in World.users {
            for channel in world.channels where world.engine.directory.channelIDs(of: viewer).contains(channel) {
                guard let bytes = try? world.engine.channel(channel, seenBy: viewer), let view = parseJSON(bytes) else {
                    found.append("\(step): \(viewer) cannot see \(channel)")
                    continue
                }
                let history = world.history(of: channel, for: viewer)
                let lastRead = view["lastReadSeq"]?.int64Value ?? 0
                let unread = history.filter { ($0["seq"]?.int64Value ?? 0) > lastRead && $0["senderId"]?.stringValue != viewer }.count
                if Int64(unread) != view["unreadCount"]?.int64Value {
                    found.append("\(step): \(viewer) in \(channel): unreadCount \(view["unreadCount"]?.int64Value ?? -1), history says \(unread)")
                }
                let lastID = view["lastMessage"]?["id"]?.stringValue
                if lastID != history.last?["id"]?.stringValue {
                    found.append("\(step): \(viewer) in \(channel): lastMessage \(lastID ?? "none"), history ends at \(history.last?["id"]?.stringValue ?? "none")")
                }
                for other in World.users where other != viewer && world.cut(viewer, other) {
                    if history.contains(where: { $0["senderId"]?.stringValue == other }) {
                        found.append("\(step): \(viewer)'s history of \(channel) shows \(other)")
                    }
                }
            }
        }
        return found
    }

    static func step(_ world: inout World, _ random: inout SeededGenerator) -> String {
        let users = World.users
        let user = users[Int(random.next() % 3)]
        let channel = world.channels[Int(random.next() % UInt64(world.channels.count))]
        let session = World.sessions[user] ?? 0
        let requester = Requester.session(session, requestID: .null)
        let roll = random.next() % 100
        switch roll {
        case 0..<35:
            world.run(world.engine.sendMessage(channel, text: "t\(world.now)", dataJSON: nil, clientMessageID: nil, from: user,
                                               device: nil, for: requester, now: world.now, monotonicNow: world.now))
            return "\(user) sends in \(channel)"
        case 35..<45:
            let (blocker, blocked) = random.next() % 2 == 0 ? ("alice", "bob") : ("bob", "alice")
            world.run(world.engine.setBlocks([blocked], blocked: true, by: blocker, for: requester, now: world.now))
            return "\(blocker) blocks \(blocked)"
        case 45..<55:
            let (blocker, blocked) = random.next() % 2 == 0 ? ("alice", "bob") : ("bob", "alice")
            world.run(world.engine.setBlocks([blocked], blocked: false, by: blocker, for: requester, now: world.now))
            return "\(blocker) unblocks \(blocked)"
        case 55..<70:
            let newest = world.stored[channel]?.count ?? 0
            let seq = Int64(random.next() % UInt64(newest + 1))
            world.run(world.engine.markRead(channel, seq: seq, by: user, session: session, for: requester))
            return "\(user) marks \(channel) read at \(seq)"
        case 70..<80:
            let online = !world.online.contains(user)
            if online { world.online.insert(user) } else { world.online.remove(user) }
            world.run(world.engine.presenceChanged(user, online: online, at: world.now))
            return "\(user) goes \(online ? "online" : "offline")"
        case 80..<88:
            world.run(world.engine.typingStart(channel, from: user, session: session, for: requester, monotonicNow: world.now))
            return "\(user) types in \(channel)"
        case 88..<92:
            world.run(world.engine.typingStop(channel, from: user, session: session, for: requester, monotonicNow: world.now))
            return "\(user) stops typing in \(channel)"
        default:
            let targets = users.filter { $0 != user }
            _ = try? world.engine.presenceSubscribe(session: session, user: user, to: targets)
            return "\(user) subscribes to presence"
        }
    }

    /// Runs in the suite: `CHAT_PROPERTY_RUNS` (default 60) runs of 150 steps from seed 1;
    /// docs/reliability.md records a longer run.
    static let runs = Int(ProcessInfo.processInfo.environment["CHAT_PROPERTY_RUNS"] ?? "") ?? 60

    @Test("random runs of 150 steps: a blocked pair never observes each other; counts, lastMessage and history agree")
    func strictModeHolds() {
        var failures: [String] = []
        var steps = 0
        for seed in 1...Self.runs where failures.isEmpty {
            var random = SeededGenerator(seed: UInt64(seed))
            var world = World()
            for index in 0..<150 {
                // Time passes (typing expires, paced read events go out), then one request.
                world.advance(by: Milliseconds(random.next() % 700))
                var found = Self.violations(in: &world, step: "seed \(seed) before step \(index)")
                // What was received is judged once, after what caused it.
                world.received = [:]
                if found.isEmpty {
                    let done = Self.step(&world, &random)
                    found = Self.violations(in: &world, step: "seed \(seed) step \(index) (\(done))")
                    world.received = [:]
                }
                steps += 1
                if !found.isEmpty {
                    failures = found
                    break
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5).joined(separator: "\n"))")
        #expect(steps == Self.runs * 150 || !failures.isEmpty)
        print("strict-mode property: \(steps) random steps in \(Self.runs) runs, \(failures.isEmpty ? 0 : 1) failing")
    }
}
