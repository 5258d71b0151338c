import Foundation
@testable import ChatCore

/// The engine with an in-memory store and a fan-out that applies the hub's rules, for the
/// message lifecycle's engine tests (PROTOCOL.md §15): writes commit at once; reads
/// answer from the stored messages and reactions; every event lands in the receiving
/// session's list, every push in `pushes`.
struct LifecycleWorld {
    var engine: ChatEngine
    var now: Milliseconds = 1_000
    /// Stored messages per channel (index = seq - 1) and the reactions (channel, seq, user, kind).
    var messages: [ChannelID: [Message]] = [:]
    var reactions: Set<[String]> = []
    var versions: [ChannelID: Int64] = [:]
    /// Each user's latest connection (the one its requests come from), and every connection.
    var sessions: [UserID: SessionID] = [:]
    var connections: [(id: SessionID, user: UserID)] = []
    var hideBlocked: Set<SessionID> = []
    /// What each session received (events) and each requester's last reply.
    var received: [SessionID: [JSONValue]] = [:]
    var replies: [SessionID: EngineReply] = [:]
    var pushes: [PushEvent] = []
    var flags: [Flag] = []
    var closed: [SessionID: SessionEnd] = [:]

    init(users: [UserID], settings: ChatEngine.Settings) {
        var directory = ChatDirectory()
        for user in users { directory.upsert(User(id: user, createdAt: 1)) }
        engine = ChatEngine(directory: directory, settings: settings)
    }

    /// Opens a session for `user` (ids 1, 2, …) with `hideBlocked` as asked.
    mutating func connect(_ user: UserID, hideBlocked: Bool = false) {
        let id = SessionID(connections.count + 1)
        sessions[user] = id
        connections.append((id, user))
        if hideBlocked { self.hideBlocked.insert(id) }
        run(engine.openSession(SessionRequest(id: id, user: user, hideBlocked: hideBlocked), now: now))
    }

    mutating func requester(_ user: UserID) -> Requester {
        .session(sessions[user] ?? 0, requestID: .number("1"))
    }

    /// A channel created by `creator` with `members` (or an open one the members join).
    mutating func channel(_ type: ChannelType, creator: UserID, members: [UserID]) -> ChannelID {
        let before = engine.directory.channelIDs(of: creator)
        run(engine.changeChannel(.create(type: type, userIDs: type == .group ? members : [], name: nil, distinct: false,
                                         pushFromBlockedUsers: nil), by: creator, for: requester(creator), now: now))
        let id = engine.directory.channelIDs(of: creator).subtracting(before).first ?? ""
        if type == .open {
            for member in members { run(engine.changeChannel(.join(id), by: member, for: requester(member), now: now)) }
        }
        return id
    }

    /// Sends and returns the stored message's JSON (the reply).
    @discardableResult
    mutating func send(_ user: UserID, _ channel: ChannelID, _ text: String, parentSeq: Int64? = nil,
                       mentions: [UserID] = []) -> JSONValue? {
        now += 1
        run(engine.sendMessage(channel, text: text, dataJSON: nil, clientMessageID: nil, parentSeq: parentSeq,
                               mentionedUserIDs: mentions, from: user, device: nil, for: requester(user), now: now,
                               monotonicNow: now))
        return lastResult(user)
    }

    mutating func block(_ blocker: UserID, _ blocked: UserID, _ isBlocked: Bool = true) {
        run(engine.setBlocks([blocked], blocked: isBlocked, by: blocker, for: requester(blocker), now: now))
    }

    @discardableResult
    mutating func change(_ user: UserID, _ channel: ChannelID, _ seq: Int64, _ change: RequestedChange) -> EngineReply? {
        now += 1
        run(engine.requestChange(change, channel: channel, seq: seq, by: user, hideBlocked: hideBlocked.contains(sessions[user] ?? 0),
                                 for: requester(user), now: now, monotonicNow: now))
        return replies[sessions[user] ?? 0]
    }

    /// The whole history (or one thread) as `user`'s connection is shown it.
    mutating func history(_ user: UserID, _ channel: ChannelID, thread: Int64? = nil) -> [JSONValue] {
        run(engine.readHistory(channel, beforeSeq: nil, afterSeq: 0, limit: 100, cursor: nil, thread: thread, by: user,
                               hideBlocked: hideBlocked.contains(sessions[user] ?? 0), for: requester(user)))
        return lastResult(user)?["messages"]?.arrayValue ?? []
    }

    /// `message.changes` after `version` as `user`'s connection is shown it.
    mutating func changes(_ user: UserID, _ channel: ChannelID, after version: Int64) -> [JSONValue] {
        run(engine.readChanges(channel, afterVersion: version, limit: 100, by: user,
                               hideBlocked: hideBlocked.contains(sessions[user] ?? 0), for: requester(user)))
        return lastResult(user)?["messages"]?.arrayValue ?? []
    }

    mutating func lastResult(_ user: UserID) -> JSONValue? {
        guard let reply = replies[sessions[user] ?? 0], case .result(let bytes) = reply else { return nil }
        return parseJSON(bytes)
    }

    /// The events named `name` `user` received since last asked (removed).
    mutating func events(_ user: UserID, _ name: String) -> [JSONValue] {
        let session = sessions[user] ?? 0
        let taken = (received[session] ?? []).filter { $0["event"]?.stringValue == name }
        received[session]?.removeAll { $0["event"]?.stringValue == name }
        return taken.compactMap { $0["data"] }
    }

    /// The events named `name` one connection received since last asked (removed).
    mutating func events(session: SessionID, _ name: String) -> [JSONValue] {
        let taken = (received[session] ?? []).filter { $0["event"]?.stringValue == name }
        received[session]?.removeAll { $0["event"]?.stringValue == name }
        return taken.compactMap { $0["data"] }
    }

    mutating func clearEvents() { received = [:] }

    mutating func run(_ effects: [EngineEffect]) {
        var queue = effects
        while !queue.isEmpty {
            let effect = queue.removeFirst()
            switch effect {
            case .persist(let id, let write):
                queue += engine.committed(id, .committed(apply(write)), monotonicNow: now)
            case .reply(let requester, let reply):
                if case .session(let session, _) = requester { replies[session] = reply }
            case .publishMessage(let channelID, let payload, let origin, let excluding):
                for session in channelSessions(channelID) where session.id != excluding {
                    if let hidden = origin.hiddenFrom, engine.userNumbers[session.user] == hidden { continue }
                    let number = engine.userNumbers[session.user] ?? 0
                    if origin.silenced?.contains(number) == true { continue }
                    if origin.related?.contains(number) == true {
                        let sender = engine.userNumbers.first { $0.value == origin.sender }?.key ?? ""
                        let relation = engine.relation(sender: sender, recipient: session.user)
                        if !DeliveryPolicy.deliversLive(kind: origin.kind, mode: origin.mode, relation: relation,
                                                        hideBlocked: hideBlocked.contains(session.id)) { continue }
                    }
                    deliver(payload, to: session.id)
                }
            case .publishChange(let channelID, let payload, let skipping, let excluding):
                for session in channelSessions(channelID) where session.id != excluding
                    && !skipping.contains(engine.userNumbers[session.user] ?? 0) {
                    deliver(payload, to: session.id)
                }
            case .publishChangeToUsers(let channelID, let payload, let users, let excluding):
                for session in channelSessions(channelID) where session.id != excluding
                    && users.contains(engine.userNumbers[session.user] ?? 0) {
                    deliver(payload, to: session.id)
                }
            case .publishToSessions(let ids, let payload):
                for id in ids { deliver(payload, to: id) }
            case .publishToUsers(let users, let payload, let excluding):
                for connection in connections where users.contains(connection.user) && connection.id != excluding {
                    deliver(payload, to: connection.id)
                }
            case .push(let events):
                pushes += events
            case .pushFlag(let flag):
                flags.append(flag)
            case .closeSessions(let ids, let end):
                for id in ids { closed[id] = end }
            case .readHistory(let read, let channel, let viewer, let before, let after, let limit, let thread):
                var visible = (messages[channel] ?? []).filter { !$0.isHidden(from: viewer) }
                if let thread { visible = visible.filter { $0.parentSeq == thread } }
                let batch: [Message]
                if let after {
                    batch = Array(visible.filter { $0.seq > after }.prefix(limit))
                } else {
                    batch = Array(visible.filter { message in before.map { message.seq < $0 } ?? true }.suffix(limit))
                }
                queue += engine.historyRead(read, batch, monotonicNow: now)
            case .readChanges(let read, let channel, let viewer, let after, let limit):
                let batch = (messages[channel] ?? []).filter { !$0.isHidden(from: viewer) && $0.version > after }
                    .sorted { ($0.version, $0.seq) < ($1.version, $1.seq) }.prefix(limit)
                queue += engine.changesRead(read, Array(batch))
            case .readAttributions(let read, let channel, let seqs, let users, let viewer):
                var attributions = MessageAttributions()
                for row in reactions.sorted(by: { $0.lexicographicallyPrecedes($1) })
                where row[0] == channel && seqs.contains(Int64(row[1]) ?? 0) && users.contains(row[2]) {
                    attributions.reactions.append(.init(seq: Int64(row[1]) ?? 0, user: row[2], kind: row[3]))
                }
                for parent in seqs {
                    for tally in tallies(channel, parent) where users.contains(tally.sender) || tally.hiddenFrom == viewer
                        || (tally.hiddenFrom == Message.hiddenFromEveryone && tally.sender != viewer) {
                        attributions.replies.append(.init(parentSeq: parent, tally: tally))
                    }
                }
                queue += engine.attributionsRead(read, attributions)
            case .readMessageStates(let read, let channel, let seqs):
                var states: [MessageState] = []
                for seq in seqs {
                    guard let message = stored(channel, seq) else { continue }
                    var state = MessageState(message: message, replies: tallies(channel, seq))
                    for row in reactions where row[0] == channel && row[1] == String(seq) {
                        state.reactors[row[3], default: []].insert(row[2])
                    }
                    states.append(state)
                }
                queue += engine.messageStatesRead(read, states, now: now, monotonicNow: now)
            default:
                continue
            }
        }
    }

    private func stored(_ channel: ChannelID, _ seq: Int64) -> Message? {
        guard let list = messages[channel], seq >= 1, seq <= Int64(list.count) else { return nil }
        return list[Int(seq - 1)]
    }

    private func tallies(_ channel: ChannelID, _ parent: Int64) -> [ReplyTally] {
        var counts: [ReplyTally] = []
        for reply in messages[channel] ?? [] where reply.parentSeq == parent {
            if let index = counts.firstIndex(where: { $0.sender == reply.senderID && $0.hiddenFrom == reply.hiddenFrom }) {
                counts[index].count += 1
            } else {
                counts.append(ReplyTally(sender: reply.senderID, hiddenFrom: reply.hiddenFrom, count: 1))
            }
        }
        return counts
    }

    /// What the SQLite and PostgreSQL stores do with a write, in memory.
    private mutating func apply(_ write: StoreWrite) -> StoreWriteResult {
        switch write {
        case .insertMessage(var message):
            let channel = message.channelID
            if let parent = message.parentSeq {
                guard let stored = stored(channel, parent), stored.parentSeq == nil else { return .refused(.messageNotFound) }
            }
            message.seq = Int64((messages[channel]?.count ?? 0) + 1)
            message.version = (versions[channel] ?? 0) + 1
            versions[channel] = message.version
            messages[channel, default: []].append(message)
            if let parent = message.parentSeq {
                messages[channel]?[Int(parent - 1)].replyCount += 1
                messages[channel]?[Int(parent - 1)].version = message.version
            }
            return .message(message)
        case .changeMessage(let change):
            guard let current = stored(change.channelID, change.seq) else { return .refused(.messageNotFound) }
            if let refusal = change.refusal(against: current) { return .refused(refusal) }
            let key = { (kind: String) in [change.channelID, String(change.seq), change.actor, kind] }
            switch change.action {
            case .edit: break
            case .delete:
                if current.isDeleted { return .unchanged(current) }
                reactions = reactions.filter { !($0[0] == change.channelID && $0[1] == String(change.seq)) }
            case .addReaction(let kind):
                if !reactions.insert(key(kind)).inserted { return .unchanged(current) }
            case .removeReaction(let kind):
                if reactions.remove(key(kind)) == nil { return .unchanged(current) }
            }
            var next = change.applied(to: current)
            next.version = (versions[change.channelID] ?? 0) + 1
            versions[change.channelID] = next.version
            messages[change.channelID]?[Int(change.seq - 1)] = next
            return .changed(next, previousVersion: current.version)
        case .insertFlag(var flag):
            flag.id = Int64(flags.count + 1)
            return .flag(flag)
        default:
            return .done
        }
    }

    private func channelSessions(_ channelID: ChannelID) -> [(id: SessionID, user: UserID)] {
        connections.filter { engine.directory.channelIDs(of: $0.user).contains(channelID) }.sorted { $0.id < $1.id }
    }

    private mutating func deliver(_ payload: [UInt8], to session: SessionID) {
        if let event = parseJSON(payload) { received[session, default: []].append(event) }
    }
}
