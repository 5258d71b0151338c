import ChatCore
import Dispatch
import Logging
import Storage

/// The driver half of the engine: carries `EngineEffect`s out, in order, on the core queue.
extension ChatService {
    func run(_ effects: [EngineEffect]) {
        reportCounters()
        for effect in effects {
            switch effect {
            case .persist(let write, let change):
                store.enqueue(change) { [self] result in
                    switch result {
                    case .failure(let error):
                        logger.error("store.error", metadata: ["error": "\(error)"])
                        settle(write, .failed)
                    case .success(let stored):
                        // In a cluster the write takes effect here once the bus has ordered it.
                        // A recognised retry goes out too: a node that never had the message
                        // (its first node died before publishing it) fans it out, the others drop it.
                        if let bus {
                            bus.publish(change, result: stored) { [self] in settle(write, .committed(stored)) }
                        } else {
                            settle(write, .committed(stored))
                        }
                    }
                }
            case .reply(let requester, let answer):
                deliver(answer, to: requester)
            case .setBlock(let blocker, let blocked, let isBlocked):
                forEachShard { $0.setBlock(blocker: blocker, blocked: blocked, isBlocked: isBlocked) }
            case .addToChannel(let users, let channel):
                forEachShard { $0.add(users: users, to: channel) }
            case .removeFromChannel(let users, let channel):
                forEachShard { $0.remove(users: users, from: channel) }
            case .publishToSessions(let sessions, let payload):
                for session in sessions { reply(to: session, payload) }
            case .publishToUsers(let users, let payload, let excluding):
                publish(SharedEvent(payload: payload), toUsers: users, excluding: excluding)
            case .closeSessions(let sessions, .deactivated):
                closeSessions(sessions, code: .userDeactivated, reason: "user deactivated")
            case .closeSessions(let sessions, .banned):
                closeSessions(sessions, code: .userBanned, reason: "banned")
            case .sessionOpened(let id, let seed):
                sessionOpened(id, seed)
            case .sessionRefused(let id, let reason):
                sessionRefused(id, reason)
            case .userWritesFailed(let waiting):
                scheduleUserRetry(waiting: waiting)
            case .takeRate(let check, let user, let rate, let burst, let now, let slowMode?):
                takeSharedRate(check, user: user, ratePerSecond: rate, burst: burst, slowMode: slowMode, now: now)
            case .takeRate(let check, let user, let rate, let burst, let now, nil):
                takeSharedRate(.messages, user: user, ratePerSecond: rate, burst: burst, now: now) { service, decision in
                    service.run(service.engine.rateTaken(check, decision, now: service.clock.now(),
                                                         monotonicNow: service.clock.monotonicNow()))
                }
            case .takeChangeRate(let check, let user, let rate, let burst, let now):
                takeSharedRate(.changes, user: user, ratePerSecond: rate, burst: burst, now: now) { service, decision in
                    service.run(service.engine.changeRateTaken(check, decision, monotonicNow: service.clock.monotonicNow()))
                }
            case .lookUpClientMessage(let lookup, let sender, let clientMessageID):
                store.message(sender: sender, clientMessageID: clientMessageID) { [self] result in
                    let found: ClientMessageLookup
                    switch result {
                    case .success(let message?): found = .found(message)
                    case .success(nil): found = .notFound
                    case .failure: found = .failed
                    }
                    inbox.async { [self] in
                        run(engine.clientMessageLookedUp(lookup, found, now: clock.now(), monotonicNow: clock.monotonicNow()))
                    }
                }
            case .readHistory(let read, let channel, let viewer, let before, let after, let limit, let thread):
                store.history(channelID: channel, viewer: viewer, beforeSeq: before, afterSeq: after, limit: limit,
                              thread: thread) { [self] result in
                    let batch = try? result.get()
                    inbox.async { [self] in run(engine.historyRead(read, batch, monotonicNow: clock.monotonicNow())) }
                }
            case .readChanges(let read, let channel, let viewer, let afterVersion, let limit):
                store.changes(channelID: channel, viewer: viewer, afterVersion: afterVersion, limit: limit) { [self] result in
                    let batch = try? result.get()
                    inbox.async { [self] in run(engine.changesRead(read, batch)) }
                }
            case .readAttributions(let read, let channel, let seqs, let users, let viewer):
                store.attributions(channelID: channel, seqs: seqs, users: users, viewer: viewer) { [self] result in
                    let attributions = try? result.get()
                    inbox.async { [self] in run(engine.attributionsRead(read, attributions)) }
                }
            case .readMessageStates(let read, let channel, let seqs):
                store.messageStates(channelID: channel, seqs: seqs) { [self] result in
                    let states = try? result.get()
                    inbox.async { [self] in
                        run(engine.messageStatesRead(read, states, now: clock.now(), monotonicNow: clock.monotonicNow()))
                    }
                }
            case .publishChange(let channel, let payload, let skipping, let excluding):
                publish(SharedEvent(payload: payload, skipping: skipping), to: channel, excluding: excluding)
            case .publishChangeToUsers(let channel, let payload, let users, let excluding):
                publish(SharedEvent(payload: payload, onlyUsers: users), to: channel, excluding: excluding)
            case .checkReactionsLater(let channel, let seq, let after):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(after))) { [self] in
                    inbox.async { [self] in run(engine.reactionWindowDue(channel, seq: seq)) }
                }
            case .publishMessage(let channel, let payload, let origin, let excluding):
                publish(SharedEvent(payload: payload, origin: origin), to: channel, excluding: excluding)
            case .push(let events):
                // The committing node alone decides push; in a cluster "offline" means
                // no live connection on any node.
                if let bus {
                    let push = self.push
                    bus.connections.offline(Array(Set(events.map(\.userID))), now: clock.now()) { offline in
                        push.emit(events.filter { offline.contains($0.userID) })
                    }
                } else {
                    push.emit(events)
                }
            case .pushFlag(let flag):
                push.emit(records: [flag.sinkJSON])
            case .relayTyping(let started, let channel, let user):
                bus?.typing.relay(started: started, channel: channel, user: user)
            case .checkTypingLater(let channel, let user, let after):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(after))) { [self] in
                    inbox.async { [self] in run(engine.typingDue(channel, user: user, monotonicNow: clock.monotonicNow())) }
                }
            case .checkTypingListLater(let channel, let token, let after):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(after))) { [self] in
                    inbox.async { [self] in run(engine.typingListDue(channel, token: token, monotonicNow: clock.monotonicNow())) }
                }
            case .checkBanLater(let channel, let user, let after):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(after))) { [self] in
                    inbox.async { [self] in run(engine.banDue(channel: channel, user: user, now: clock.now())) }
                }
            case .checkReadEventLater(let channel, let user, let after):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(after))) { [self] in
                    inbox.async { [self] in run(engine.readEventDue(channel, user: user, monotonicNow: clock.monotonicNow())) }
                }
            case .checkGapLater(let channel, let afterSeq):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(ChatEngine.gapHoldMilliseconds))) { [self] in
                    inbox.async { [self] in run(engine.gapDue(channel, afterSeq: afterSeq)) }
                }
            case .followChannels(let channels):
                // Sessions opening in one burst share one subscription and one store read.
                let startsABatch = channelsToFollow.isEmpty
                channelsToFollow += channels
                if startsABatch {
                    inbox.async { [self] in
                        let batch = channelsToFollow
                        channelsToFollow = []
                        follow(batch)
                    }
                }
            case .unfollowChannels(let channels):
                bus?.unfollow(channels)
            case .checkFollowingLater(let after):
                queue.asyncAfter(deadline: .now() + .milliseconds(Int(min(after, 86_400_000)))) { [self] in
                    inbox.async { [self] in run(engine.followingDue(now: clock.now())) }
                }
            case .log(let level, let event, let fields, let session):
                log(level, event, fields, session: session)
            }
        }
    }

    /// Numbers an admin API call whose answer `respond` takes when the engine gives it.
    func adminCall(_ respond: @escaping @Sendable (EngineReply) -> Void) -> Requester {
        lastAdminCall += 1
        adminReplies[lastAdminCall] = respond
        return .admin(lastAdminCall)
    }

    /// A write's outcome, from the store's queue (or the bus's): the engine takes it on the
    /// core with the others of its burst.
    private func settle(_ write: WriteID, _ outcome: WriteOutcome) {
        guard outcomes.append(write, outcome) else { return }
        inbox.async { [self] in
            outcomes.take(into: &settling)
            for (write, outcome) in settling {
                run(engine.committed(write, outcome, monotonicNow: clock.monotonicNow()))
            }
            settling.removeAll(keepingCapacity: true)
        }
    }

    /// Moves the message metrics by what the engine counted since the last call.
    func reportCounters() {
        let now = engine.counters
        guard now != reportedCounters else { return }
        let was = reportedCounters
        reportedCounters = now
        if now.received > was.received { metrics.messagesReceived.increment(by: now.received - was.received) }
        if now.stored > was.stored { metrics.messagesStored.increment(by: now.stored - was.stored) }
        if now.rateLimited > was.rateLimited { metrics.messagesRateLimited.increment(by: now.rateLimited - was.rateLimited) }
        if now.openChannelThrottled > was.openChannelThrottled {
            metrics.messagesOpenChannelThrottled.increment(by: now.openChannelThrottled - was.openChannelThrottled)
        }
        if now.typingStarts > was.typingStarts { metrics.typingStarts.increment(by: now.typingStarts - was.typingStarts) }
        if now.typingStops > was.typingStops { metrics.typingStops.increment(by: now.typingStops - was.typingStops) }
        if now.readMarksStored > was.readMarksStored {
            metrics.readMarksStored.increment(by: now.readMarksStored - was.readMarksStored)
        }
        if now.readMarksFailed > was.readMarksFailed {
            metrics.readMarksFailed.increment(by: now.readMarksFailed - was.readMarksFailed)
        }
        if now.readEvents > was.readEvents { metrics.readEvents.increment(by: now.readEvents - was.readEvents) }
        if now.presenceSubscriptions != was.presenceSubscriptions {
            metrics.presenceSubscriptions.record(now.presenceSubscriptions)
        }
    }

    private func deliver(_ answer: EngineReply, to requester: Requester) {
        switch requester {
        case .session(let id, let requestID):
            // A session that closed meanwhile gets nothing (its loop finds no session by that id).
            switch answer {
            case .blockResults(let results):
                reply(to: id, WireEncoding.ok(id: requestID) { w in Self.writeResults(results, to: &w) })
            case .result(let json):
                reply(to: id, requestID: requestID, json: json)
            case .failure(let error):
                reply(to: id, requestID: requestID, error: error)
            }
        case .admin(let call):
            adminReplies.removeValue(forKey: call)?(answer)
        }
    }
}

// MARK: cluster

extension ChatService {
    /// Another node's committed write, off the bus (on the bus loop).
    func busReceived(_ event: BusEvent) {
        inbox.async { [self] in run(engine.replicated(event, now: clock.now(), monotonicNow: clock.monotonicNow())) }
    }

    /// Follows `channels`' streams: once the bus hears them, their state is read from the
    /// store and installed (`ChatEngine.streamsLoaded`); whatever they carried meanwhile
    /// waits in the engine.
    private func follow(_ channels: [ChannelID]) {
        let read: @Sendable () -> Void = { [self] in
            if let batch = streamReads.add(channels) { readStreams(batch) }
        }
        guard let bus else { return read() }
        bus.follow(channels, ready: read)
    }

    /// One follow read (`StreamReadBatcher` says which channels and when), handed to the engine.
    private func readStreams(_ channels: [ChannelID]) {
        store.streams(of: channels) { [self] result in
            if case .failure(let error) = result {
                logger.error("store.error", metadata: ["error": "\(error)", "read": "streams"])
            }
            inbox.async { [self] in
                run(engine.streamsLoaded(channels, try? result.get(), monotonicNow: clock.monotonicNow()))
            }
            if let next = streamReads.finished() { readStreams(next) }
        }
    }

    /// Another node's typing change.
    func busTyping(_ relay: TypingRelay) {
        inbox.async { [self] in run(engine.typingRelayed(relay, monotonicNow: clock.monotonicNow())) }
    }

    /// A user came online or went offline on some node (off the bus, in Redis's order).
    func busPresence(_ user: UserID, online: Bool, at time: Milliseconds) {
        inbox.async { [self] in run(engine.presenceChanged(user, online: online, at: time)) }
    }

    /// Every user with a live connection entry, read when the presence subscription
    /// (re)started: whoever changed meanwhile is announced now.
    func busPresenceSnapshot(_ entries: [(user: UserID, expiresAt: Milliseconds)]) {
        inbox.async { [self] in
            let now = clock.now()
            run(engine.presenceSnapshot(online: Set(entries.filter { $0.expiresAt > now }.map(\.user)), at: now))
        }
    }

    /// The bus is back after an outage: every connection here hears which of its channels
    /// may have missed live events (`session.resync`), and catches up from history.
    func busResumed() {
        sendResync { _ in true }
        inbox.async { [self] in run(engine.followedStreamsMayBeStale()) }
    }

    /// `session.resync` to every connection here, naming those of its user's channels that
    /// `affected` selects (a user with none hears nothing).
    func sendResync(_ affected: @escaping @Sendable (ChannelID) -> Bool) {
        inbox.async { [self] in
            metrics.busResyncs.increment()
            run(engine.resync(affected))
        }
    }
}

extension ChatService {
    /// Takes one token of `user`'s rate in `bucket` from the limiter every node shares and
    /// hands the answer to `answered` on the core queue; nil (no bus, or no answer in time)
    /// leaves the decision to the engine's own bucket.
    /// A send's rate and its channel's slow mode from the limiter every node shares.
    fileprivate func takeSharedRate(_ check: WriteID, user: UserID, ratePerSecond: Int, burst: Int, slowMode: SlowModeAsk,
                                    now: Milliseconds) {
        let decided: @Sendable (TokenBucketLimiter<UserNumber>.Decision?, Int64?) -> Void = { [self] decision, slowModeRetryAfterMs in
            inbox.async { [self] in
                run(engine.rateTaken(check, decision, slowModeRetryAfterMs: slowModeRetryAfterMs, now: clock.now(),
                                     monotonicNow: clock.monotonicNow()))
            }
        }
        if let bus {
            bus.rates.take(user: user, ratePerSecond: ratePerSecond, burst: burst, slowMode: slowMode, now: now, decided: decided)
        } else {
            decided(nil, nil)
        }
    }

    fileprivate func takeSharedRate(_ bucket: SharedRateLimit.Bucket, user: UserID, ratePerSecond: Int, burst: Int,
                                    now: Milliseconds,
                                    answered: @escaping @Sendable (ChatService, TokenBucketLimiter<UserNumber>.Decision?) -> Void) {
        let decided: @Sendable (TokenBucketLimiter<UserNumber>.Decision?) -> Void = { [self] decision in
            inbox.async { [self] in answered(self, decision) }
        }
        if let bus {
            bus.rates.take(user: user, bucket: bucket, ratePerSecond: ratePerSecond, burst: burst, now: now, decided: decided)
        } else {
            decided(nil)
        }
    }
}
