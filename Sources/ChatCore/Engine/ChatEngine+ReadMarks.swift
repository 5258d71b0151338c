/// A `channel.markRead` on its way to the store: whose mark, how far, and who waits for it.
struct ReadMarkWrite: Sendable {
    var key: ReadEventPacing.Key
    var seq: Int64
    var requesters: [Requester]
    /// The requesting connection (left out of the `channel.read` it causes).
    var session: SessionID?
}

extension ChatEngine {
    /// `channel.markRead` (PROTOCOL.md §14): moves the member's mark to `seq` (never back, never
    /// past the channel's newest message), stored before the answer
    /// `{"channelId","lastReadSeq","unreadCount"}`; the other members get `channel.read`
    /// (paced, `ReadEventPacing`; not to whom the block rule keeps it from). One write per
    /// member and channel is in flight at a time; marks asked for meanwhile ride on the next.
    public mutating func markRead(_ channelID: ChannelID, seq: Int64, by user: UserID, session: SessionID?,
                                  for requester: Requester) -> [EngineEffect] {
        guard seq >= 0 else { return [.reply(requester, .failure(ChatError(.badRequest, "seq must not be negative")))] }
        do throws(ChatError) {
            _ = try directory.memberChannel(channelID, of: user)
        } catch {
            return [.reply(requester, .failure(error))]
        }
        let key = ReadEventPacing.Key(channel: channelID, user: user)
        let target = min(seq, directory.newestMessage(of: channelID)?.seq ?? 0)
        if let inFlight = readMarksWriting[key], var write = readWrites[inFlight] {
            if target <= write.seq {
                write.requesters.append(requester)
                readWrites[inFlight] = write
            } else {
                var next = readMarksQueued[key] ?? ReadMarkWrite(key: key, seq: target, requesters: [], session: session)
                next.seq = max(next.seq, target)
                next.requesters.append(requester)
                next.session = session
                readMarksQueued[key] = next
            }
            return []
        }
        guard target > directory.reads.lastReadSeq(of: user, in: channelID) else {
            return [.reply(requester, .result(readResult(channelID, for: user)))]
        }
        return startReadMark(ReadMarkWrite(key: key, seq: target, requesters: [requester], session: session))
    }

    private mutating func startReadMark(_ mark: ReadMarkWrite) -> [EngineEffect] {
        let write = nextWriteID()
        readWrites[write] = mark
        readMarksWriting[mark.key] = write
        return [.persist(write, .markRead(channelID: mark.key.channel, userID: mark.key.user, seq: mark.seq))]
    }

    mutating func readMarkCommitted(_ mark: ReadMarkWrite, _ outcome: WriteOutcome, monotonicNow: Milliseconds) -> [EngineEffect] {
        readMarksWriting[mark.key] = nil
        var effects: [EngineEffect] = []
        if case .committed = outcome {
            counters.readMarksStored += 1
            let moved = directory.markRead(mark.key.user, channel: mark.key.channel, seq: mark.seq)
            _ = deferWhileLoading(mark.key.channel, .readMark(mark.key.user, seq: mark.seq))
            let result = readResult(mark.key.channel, for: mark.key.user)
            effects += mark.requesters.map { .reply($0, .result(result)) }
            if moved { effects += readEvent(mark.key, excluding: mark.session, monotonicNow: monotonicNow) }
        } else {
            counters.readMarksFailed += 1
            let error = ChatError(.internalError, "storage failed; retry")
            effects += mark.requesters.map { .reply($0, .failure(error)) }
        }
        if let next = readMarksQueued.removeValue(forKey: mark.key) {
            if next.seq > directory.reads.lastReadSeq(of: next.key.user, in: next.key.channel) {
                effects += startReadMark(next)
            } else {
                let result = readResult(next.key.channel, for: next.key.user)
                effects += next.requesters.map { .reply($0, .result(result)) }
            }
        }
        return effects
    }

    /// Another node's committed mark (off the bus): this node's state, and `channel.read` to
    /// its own connections.
    mutating func readMarkReplicated(_ channelID: ChannelID, user: UserID, seq: Int64,
                                     monotonicNow: Milliseconds) -> [EngineEffect] {
        let moved = directory.markRead(user, channel: channelID, seq: seq)
        _ = deferWhileLoading(channelID, .readMark(user, seq: seq))
        guard moved else { return [] }
        return readEvent(ReadEventPacing.Key(channel: channelID, user: user), excluding: nil, monotonicNow: monotonicNow)
    }

    /// A held-back `channel.read` is due: it goes out with the reader's mark as it is now.
    public mutating func readEventDue(_ channelID: ChannelID, user: UserID, monotonicNow: Milliseconds) -> [EngineEffect] {
        let key = ReadEventPacing.Key(channel: channelID, user: user)
        guard readPacing.due(key, now: monotonicNow) else { return [] }
        return readEventNow(key, excluding: nil)
    }

    private mutating func readEvent(_ key: ReadEventPacing.Key, excluding: SessionID?,
                                    monotonicNow: Milliseconds) -> [EngineEffect] {
        readPacing.prune(now: monotonicNow)
        let members = directory.channels[key.channel]?.members.count ?? 0
        switch readPacing.moved(key, members: members, now: monotonicNow) {
        case .send:
            return readEventNow(key, excluding: excluding)
        case .later(let after):
            return [.checkReadEventLater(key.channel, user: key.user, afterMilliseconds: after)]
        case .waiting:
            return []
        }
    }

    /// `channel.read` to the channel's members and the reader's other connections, except
    /// those §14 keeps it from: in a 1-to-1, whom the reader blocked; in strict mode, anyone
    /// blocked with the reader either way.
    private mutating func readEventNow(_ key: ReadEventPacing.Key, excluding: SessionID?) -> [EngineEffect] {
        guard let channel = directory.channels[key.channel] else { return [] }
        let reader = key.user
        var withheld: Set<UserID> = []
        switch settings.blockingMode {
        case .strict:
            withheld = directory.blocks.blocked(by: reader).union(directory.blocks.blockers(of: reader))
        case .standard:
            if channel.kind == .oneToOne { withheld = directory.blocks.blocked(by: reader) }
        }
        var recipients = withheld.isEmpty ? channel.members : channel.members.filter { !withheld.contains($0) }
        // A shadow-banned reader's marks reach its own connections only (§16).
        if directory.shadowBanned(in: channel).contains(reader) { recipients = [reader] }
        counters.readEvents += 1
        let payload = WireEncoding.event("channel.read") { w in
            w.beginObject()
            w.key("channelId"); w.string(key.channel)
            w.key("userId"); w.string(reader)
            w.key("lastReadSeq"); w.int(directory.reads.lastReadSeq(of: reader, in: key.channel))
            w.endObject()
        }
        return [.publishToUsers(recipients, payload: payload, excluding: excluding)]
    }

    /// `{"channelId","lastReadSeq","unreadCount"}` for `user`.
    private func readResult(_ channelID: ChannelID, for user: UserID) -> [UInt8] {
        let state = directory.readState(of: channelID, for: user)
        var w = JSONWriter()
        w.beginObject()
        w.key("channelId"); w.string(channelID)
        w.key("lastReadSeq"); w.int(state.lastReadSeq)
        w.key("unreadCount"); w.int(state.unreadCount)
        w.endObject()
        return w.bytes
    }
}
