/// What a channel's stream does to a node while the node reads the channel's state
/// (`ChannelInterest.StreamState.loading`): kept, in order, and applied once the state is in.
enum DeferredStreamWrite: Sendable {
    /// A committed message, recorded and fanned out after the read; one the read already
    /// holds is fanned out without being recorded again (`replayDeferred`).
    case message(Message, json: [UInt8], excluding: SessionID?)
    /// A committed change (or a reply's count), applied and sent after the read, its answer too.
    case change(LoggedChange)
    /// A committed read mark, already applied and answered: applied again over the state read
    /// (marks never move back, so twice is once).
    case readMark(UserID, seq: Int64)
    /// The answer to a channel request (`channel.join`, an invite) that shows the channel's
    /// newest message and unread count as `viewer` sees them: given once they are read.
    case channelReply(Requester, viewer: UserID)
}

/// Messages stored in a channel after members joined it, read for this node's connections
/// of those members once the channel's state is read (`ChatEngine.catchUpFrom`).
struct CatchUpRead: Sendable {
    var channel: ChannelID
    var afterSeq: Int64
    var throughSeq: Int64
}

/// Cluster mode (`Settings.followGraceMilliseconds`): the node follows the streams of the
/// channels where a member holds a session here (`ChannelInterest`). Following a channel
/// starts with `.followChannels` (the driver subscribes to its stream, then reads its state,
/// then calls `streamsLoaded`); a session opens once every channel of its user is read, so
/// its first `channel.list` is current. The last local member session leaving starts the
/// grace; its end is `.unfollowChannels`, and what the node knew of the channel is dropped.
extension ChatEngine {
    /// Whether this engine follows only some channels (a cluster node).
    var followsSomeChannels: Bool { interest != nil }

    /// A session opened here for `user`: its channels are followed. True when the session
    /// waits for some of them to be read before it opens.
    mutating func followChannels(ofNewSession session: SessionID, user: UserID, into effects: inout [EngineEffect]) -> Bool {
        // Mutated in place (`interest?.`): a copy would cost every followed channel per session.
        guard interest != nil else { return false }
        let channels = directory.channelIDs(of: user)
        let started = interest?.add(1, to: channels) ?? []
        if !started.isEmpty { effects.append(.followChannels(started.sorted())) }
        guard channels.contains(where: { interest?.state(of: $0) == .loading }) else { return false }
        sessionsAwaitingStreams.append(session)
        return true
    }

    /// A session of `user` closed here: its channels lose one local session.
    mutating func unfollowChannels(ofClosedSession session: SessionID, user: UserID, now: Milliseconds) -> [EngineEffect] {
        guard interest != nil else { return [] }
        sessionsAwaitingStreams.removeAll { $0 == session }
        let due = interest?.remove(1, from: directory.channelIDs(of: user), now: now)
        return due.map { [.checkFollowingLater(afterMilliseconds: max($0 - now, 0))] } ?? []
    }

    /// Members joined or left `channel` (committed here or heard from another node, the
    /// channel's newest seq at that write being `lastSeq`): the channel gains or loses their
    /// sessions here. A channel that is read for members who joined tells them, once read,
    /// the messages stored after `lastSeq` (`catchUpFrom`): on one node they would have had
    /// them live.
    mutating func followMembers(added: [UserID], removed: [UserID], of channel: ChannelID, lastSeq: Int64?,
                                now: Milliseconds) -> [EngineEffect] {
        guard interest != nil else { return [] }
        var effects: [EngineEffect] = []
        let joining = added.reduce(0) { $0 + sessions.count(of: $1) }
        let started = interest?.add(joining, to: [channel]) ?? []
        if !started.isEmpty { effects.append(.followChannels(started)) }
        if joining > 0, let lastSeq, interest?.state(of: channel) == .loading {
            catchUpFrom[channel] = min(catchUpFrom[channel] ?? lastSeq, lastSeq)
        }
        let leaving = removed.reduce(0) { $0 + sessions.count(of: $1) }
        if let due = interest?.remove(leaving, from: [channel], now: now) {
            effects.append(.checkFollowingLater(afterMilliseconds: max(due - now, 0)))
        }
        return effects
    }

    /// Keeps `write` for after `channel`'s read when the channel is being read; false (the
    /// caller goes on) otherwise.
    mutating func deferWhileLoading(_ channel: ChannelID, _ write: DeferredStreamWrite) -> Bool {
        guard interest?.state(of: channel) == .loading else { return false }
        deferredStreams[channel, default: []].append(write)
        return true
    }

    /// The state of `channels` as the store holds it (nil: the read failed; the node goes on
    /// with what it knew, and says so in the log): installed, then what their streams did
    /// meanwhile is applied in order, and the sessions that waited for them open.
    public mutating func streamsLoaded(_ channels: [ChannelID], _ streams: ChannelStreams?,
                                       monotonicNow: Milliseconds) -> [EngineEffect] {
        guard interest != nil else { return [] }
        let read = channels.filter { interest?.state(of: $0) == .loading }
        var effects: [EngineEffect] = []
        if let streams {
            let installed = Set(read)
            directory.forgetStreams(of: read)
            directory.loadStreams(ChannelStreams(
                channels: read,
                lastMessages: streams.lastMessages.filter { installed.contains($0.channelID) },
                lastVisible: streams.lastVisible.filter { installed.contains($0.message.channelID) },
                readMarks: streams.readMarks.filter { installed.contains($0.channelID) },
                messagesAfterMarks: streams.messagesAfterMarks.filter { installed.contains($0.channelID) },
                versions: streams.versions.filter { installed.contains($0.key) }))
        } else if !read.isEmpty {
            effects.append(.log(.warning, "bus.follow_read_failed", ["channels": .number(Int64(read.count))]))
        }
        var settled: [ChannelID] = []
        for channel in read {
            // Copies of its messages may be older than what was read.
            messageStates.dropChannel(channel)
            // Members who joined meanwhile get the messages since their join first; the
            // channel's own events wait behind them.
            if let from = catchUpFrom.removeValue(forKey: channel), streams != nil,
               let newest = directory.newestMessage(of: channel)?.seq, newest > from {
                effects += readCatchUp(CatchUpRead(channel: channel, afterSeq: from, throughSeq: newest))
            } else {
                settled.append(channel)
            }
        }
        effects += settle(settled, monotonicNow: monotonicNow)
        return effects
    }

    /// Channels now read and caught up: current, their waiting events applied in order, and
    /// the sessions that waited for them opened.
    private mutating func settle(_ channels: [ChannelID], caughtUpThrough: Int64? = nil,
                                 monotonicNow: Milliseconds) -> [EngineEffect] {
        guard interest != nil else { return [] }
        let settled = interest?.loaded(channels) ?? []
        var effects: [EngineEffect] = []
        for channel in settled {
            effects += replayDeferred(channel, caughtUpThrough: caughtUpThrough, monotonicNow: monotonicNow)
        }
        effects += openSessionsWithCurrentStreams()
        return effects
    }

    private mutating func readCatchUp(_ read: CatchUpRead) -> [EngineEffect] {
        let id = nextWriteID()
        catchUpReads[id] = read
        // Viewer "" is no user: every message; the §5 check applies per recipient.
        return [.readHistory(id, channel: read.channel, viewer: "", beforeSeq: read.throughSeq + 1, afterSeq: read.afterSeq,
                             limit: Int(min(read.throughSeq - read.afterSeq, 100)))]
    }

    /// A catch-up read's answer (nil: failed, and the rest is given up: the clients read
    /// history): its messages go to the channel's connections here, then the next page, or
    /// the channel settles.
    mutating func catchUpRead(_ read: CatchUpRead, _ batch: [Message]?, monotonicNow: Milliseconds) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        if let channel = directory.channels[read.channel] {
            for message in batch ?? [] where message.seq > read.afterSeq && message.seq <= read.throughSeq && message.deletedAt == nil {
                let relations = senderRelations(message.senderID, in: channel)
                effects += announceNew(message, json: Self.encode(message), in: channel, relations: relations, excluding: nil,
                                       monotonicNow: monotonicNow)
            }
        }
        if let last = batch?.last?.seq, last < read.throughSeq, last > read.afterSeq {
            return effects + readCatchUp(CatchUpRead(channel: read.channel, afterSeq: last, throughSeq: read.throughSeq))
        }
        return effects + settle([read.channel], caughtUpThrough: read.throughSeq, monotonicNow: monotonicNow)
    }

    /// Applies what `channelID`'s stream carried while it was read. A message the read already
    /// holds was still told to nobody here: it goes out without being recorded again, unless
    /// a catch-up read through `caughtUpThrough` told it already.
    private mutating func replayDeferred(_ channelID: ChannelID, caughtUpThrough: Int64? = nil,
                                         monotonicNow: Milliseconds) -> [EngineEffect] {
        guard let writes = deferredStreams.removeValue(forKey: channelID) else { return [] }
        var effects: [EngineEffect] = []
        for write in writes {
            switch write {
            case .message(let stored, let json, let excluding):
                guard let channel = directory.channels[channelID] else { continue }
                if stored.seq <= directory.newestMessage(of: channelID)?.seq ?? 0 {
                    if stored.seq > caughtUpThrough ?? 0 {
                        effects += announceNew(stored, json: json, in: channel,
                                               relations: senderRelations(stored.senderID, in: channel),
                                               excluding: excluding, monotonicNow: monotonicNow)
                    }
                    continue
                }
                effects += recordInOrder(stored, json: json, in: channel, excluding: excluding, monotonicNow: monotonicNow)
            case .change(let entry):
                effects += logChange(entry)
            case .readMark(let user, let seq):
                directory.markRead(user, channel: channelID, seq: seq)
            case .channelReply(let requester, let viewer):
                guard let channel = directory.channels[channelID] else { continue }
                effects.append(.reply(requester, .result(encode(channel, for: viewer))))
            }
        }
        return effects
    }

    /// The sessions that waited for their channels to be read, in the order they came, once
    /// none of their user's channels is still being read.
    private mutating func openSessionsWithCurrentStreams() -> [EngineEffect] {
        guard interest != nil, !sessionsAwaitingStreams.isEmpty else { return [] }
        var effects: [EngineEffect] = []
        var waiting: [SessionID] = []
        for session in sessionsAwaitingStreams {
            guard let user = sessions.user(of: session) else { continue }
            if directory.channelIDs(of: user).contains(where: { interest?.state(of: $0) == .loading }) {
                waiting.append(session)
            } else {
                effects.append(.sessionOpened(session, seed(for: user)))
            }
        }
        sessionsAwaitingStreams = waiting
        return effects
    }

    /// The grace of channels without local member sessions may have ended: those are no
    /// longer followed, and what this node knew of them is dropped.
    public mutating func followingDue(now: Milliseconds) -> [EngineEffect] {
        guard let (stopped, next) = interest?.expire(now: now) else { return [] }
        var effects: [EngineEffect] = []
        if !stopped.isEmpty {
            directory.forgetStreams(of: stopped)
            for channel in stopped {
                messageStates.dropChannel(channel)
                deferredStreams[channel] = nil
                catchUpFrom[channel] = nil
                // Messages held for a gap in its seqs: the next follow reads the channel anew.
                heldMessages.drop(channel, upTo: .max)
            }
            effects.append(.unfollowChannels(stopped))
        }
        if let next { effects.append(.checkFollowingLater(afterMilliseconds: max(next - now, 0))) }
        return effects
    }

    /// The bus was lost and is back: every followed channel may have missed events, so each
    /// is read again (its events wait meanwhile).
    public mutating func followedStreamsMayBeStale() -> [EngineEffect] {
        let channels = interest?.reloadAll() ?? []
        return channels.isEmpty ? [] : [.followChannels(channels)]
    }

    /// The channels this node follows and how far each is read (tests, metrics).
    public var followedChannels: [ChannelID: ChannelInterest.StreamState] { interest?.streams ?? [:] }
}
