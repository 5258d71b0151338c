import ChatCore
import Dispatch
import EventLoop
import Synchronization
import WebSocket

/// One event loop's part of the hub: which of its sessions belong to which
/// channel and user. Touched only on its loop, so fan-out takes no lock
/// (hence `@unchecked Sendable`: it is handed to its loop, never shared).
///
/// `slots` and `userSessions` own the sessions; a channel's list refers to them without
/// owning them, so the fan-out loop touches no reference count per recipient. That holds
/// because a session leaves every list of the shard in the same `unregister`, which runs
/// from the connection's close, and a connection closes on a later loop turn than any
/// write that made it close (`SocketConnection.closeNow` releases on the next turn): no
/// delivery can free a session while the loop still walks its channel.
final class HubShard: @unchecked Sendable {
    let loop: EventLoop
    private let metrics: GatewayMetrics
    private var channelSessions: [ChannelID: [Unmanaged<ChatSession>]] = [:]
    private var userSessions: [UserID: [ChatSession]] = [:]
    /// Sessions by the slot of their `SessionAddress` (assigned by the core).
    private var slots: [ChatSession?] = []

    init(loop: EventLoop, metrics: GatewayMetrics) {
        self.loop = loop
        self.metrics = metrics
    }

    /// Makes the session the core accepted, with what it receives and its block sets as of
    /// that moment; later hub changes queued by the core follow on this loop.
    func register(_ record: SessionRecord, channels: Set<ChannelID>, blocked: Set<UserNumber>, blockedBy: Set<UserNumber>,
                  service: ChatService) {
        let session = ChatSession(record: record, loop: loop, service: service)
        session.blocked = blocked
        session.blockedBy = blockedBy
        let slot = SessionAddress(record.id).slot
        if slots.count <= slot { slots.append(contentsOf: repeatElement(nil, count: slot + 1 - slots.count)) }
        slots[slot] = session
        userSessions[session.userID, default: []].append(session)
        for channel in channels { channelSessions[channel, default: []].append(Unmanaged.passUnretained(session)) }
        session.channels = channels
    }

    /// The live session with this id, if it is still here.
    func session(_ id: SessionID) -> ChatSession? {
        let slot = SessionAddress(id).slot
        guard slot < slots.count, let session = slots[slot], session.id == id else { return nil }
        return session
    }

    func unregister(_ session: ChatSession) {
        let slot = SessionAddress(session.id).slot
        if slot < slots.count, slots[slot] === session { slots[slot] = nil }
        userSessions[session.userID]?.removeAll { $0 === session }
        if userSessions[session.userID]?.isEmpty == true { userSessions[session.userID] = nil }
        for channel in session.channels {
            channelSessions[channel]?.removeAll { $0.takeUnretainedValue() === session }
            if channelSessions[channel]?.isEmpty == true { channelSessions[channel] = nil }
        }
        session.channels = []
    }

    /// `users` are now in `channel`: their sessions on this loop start receiving it.
    func add(users: [UserID], to channel: ChannelID) {
        for user in users {
            for session in userSessions[user] ?? [] where session.channels.insert(channel).inserted {
                channelSessions[channel, default: []].append(Unmanaged.passUnretained(session))
            }
        }
    }

    func remove(users: [UserID], from channel: ChannelID) {
        for user in users {
            for session in userSessions[user] ?? [] where session.channels.remove(channel) != nil {
                channelSessions[channel]?.removeAll { $0.takeUnretainedValue() === session }
            }
        }
        if channelSessions[channel]?.isEmpty == true { channelSessions[channel] = nil }
    }

    /// Queues one shared event to every session of the channel except `excluded`;
    /// a `message.new` is checked against each session's blocked sets first.
    func deliver(_ event: SharedEvent, to channel: ChannelID, excluding excluded: SessionID?) {
        guard let sessions = channelSessions[channel] else { return }
        var delivered = 0
        var suppressed = 0
        if let origin = event.origin, origin.related != nil || origin.hiddenFrom != nil || origin.silenced != nil {
            let related = origin.related ?? []
            Self.forEach(in: sessions, except: excluded) { session in
                if origin.hiddenFrom == session.userNumber || origin.silenced?.contains(session.userNumber) == true
                    || (related.contains(session.userNumber) && !delivers(origin, to: session)) {
                    suppressed += 1
                    return
                }
                session.deliver(event)
                delivered += 1
            }
        } else if let only = event.onlyUsers {
            // A lifecycle event for the users who share one view of it (§15).
            Self.forEach(in: sessions, except: excluded) { session in
                if only.contains(session.userNumber) { session.deliver(event) }
            }
        } else if !event.skipping.isEmpty {
            // A lifecycle event (§15): the engine sent its own version to these users' sessions.
            Self.forEach(in: sessions, except: excluded) { session in
                if !event.skipping.contains(session.userNumber) { session.deliver(event) }
            }
        } else {
            // Not a message, or nobody in the channel is blocked with its sender: no per-recipient check.
            Self.forEach(in: sessions, except: excluded) { session in
                session.deliver(event)
                delivered += 1
            }
        }
        guard event.origin != nil else { return }
        metrics.deliveries.increment(by: delivered)
        if suppressed > 0 { metrics.deliveriesSuppressedByBlocking.increment(by: suppressed) }
        metrics.fanOutLatency.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds &- event.publishedAt))
    }

    /// Each session of a channel list but `excluded`, reached without a reference count.
    @inline(__always)
    private static func forEach(in sessions: [Unmanaged<ChatSession>], except excluded: SessionID?,
                                _ body: (ChatSession) -> Void) {
        for entry in sessions {
            entry._withUnsafeGuaranteedRef { session in
                if session.id != excluded { body(session) }
            }
        }
    }

    private func delivers(_ origin: SharedEvent.Origin, to session: ChatSession) -> Bool {
        let relation = DeliveryPolicy.Relation(
            recipientBlockedSender: session.blocked.contains(origin.sender),
            senderBlockedRecipient: session.blockedBy.contains(origin.sender))
        return relation == .none
            || DeliveryPolicy.deliversLive(kind: origin.kind, mode: origin.mode, relation: relation, hideBlocked: session.hideBlocked)
    }

    /// Applies a block change to the sessions of both users on this loop.
    func setBlock(blocker: NumberedUser, blocked: NumberedUser, isBlocked: Bool) {
        for session in userSessions[blocker.id] ?? [] {
            if isBlocked { session.blocked.insert(blocked.number) } else { session.blocked.remove(blocked.number) }
        }
        for session in userSessions[blocked.id] ?? [] {
            if isBlocked { session.blockedBy.insert(blocker.number) } else { session.blockedBy.remove(blocker.number) }
        }
    }

    func deliver(_ event: SharedEvent, toUsers users: [UserID], excluding excluded: SessionID?) {
        for user in users {
            for session in userSessions[user] ?? [] where session.id != excluded {
                session.deliver(event)
            }
        }
    }

    func sessions(of user: UserID) -> [ChatSession] { userSessions[user] ?? [] }
}
