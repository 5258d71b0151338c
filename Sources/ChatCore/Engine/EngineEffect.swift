/// Names one write the engine asked for, so its outcome finds the request it belongs to.
public typealias WriteID = UInt64

/// Names one live client connection (the gateway's connection id).
public typealias SessionID = UInt64

/// Who asked, and where the answer goes.
public enum Requester: Sendable, Equatable {
    /// A client connection's request, with the `id` its reply echoes.
    case session(SessionID, requestID: JSONValue)
    /// A call of the admin API, numbered by the driver.
    case admin(UInt64)

    /// The engine itself (a ban that expired lifts itself): its reply goes nowhere. The
    /// driver numbers admin calls from 1.
    public static let expiry = Requester.admin(0)

    /// The session to leave out of events about the caller's own change.
    public var session: SessionID? {
        if case .session(let id, _) = self { return id }
        return nil
    }
}

/// An answer, for the driver to encode for its requester (a client reply or an admin response).
public enum EngineReply: Sendable, Equatable {
    /// `user.block` / `user.unblock`: `success` or an `ERR_*` code per requested user id.
    case blockResults([UserID: String])
    /// A result object, already encoded (a channel as the requester sees it, `{}`).
    case result([UInt8])
    case failure(ChatError)
}

/// How much a log line matters.
public enum LogLevel: Sendable, Equatable {
    case info
    case notice
    case warning
}

/// What the result of a write is, as the engine needs it.
public enum WriteOutcome: Sendable, Equatable {
    case committed(StoreWriteResult)
    case failed
}

/// Something the engine decided should happen: the driver carries the effects out in
/// order (the engine itself does no I/O, reads no clock and touches no queue).
public enum EngineEffect: Sendable, Equatable {
    /// Enqueue the write; report its outcome with `ChatEngine.committed(_:_:)`.
    case persist(WriteID, StoreWrite)
    case reply(Requester, EngineReply)
    /// Update the block sets of both users' live sessions (their fan-out filter), before
    /// anything that follows.
    case setBlock(blocker: NumberedUser, blocked: NumberedUser, isBlocked: Bool)
    /// Make the live sessions of `users` receive (or stop receiving) a channel's events.
    case addToChannel([UserID], ChannelID)
    case removeFromChannel([UserID], ChannelID)
    /// Send one event (its JSON text) to every live session of `users` but `excluding`.
    case publishToUsers([UserID], payload: [UInt8], excluding: SessionID?)
    /// Send one event (its JSON text) to these sessions.
    case publishToSessions([SessionID], payload: [UInt8])
    /// Close these live sessions (all of one user's).
    case closeSessions([SessionID], SessionEnd)
    /// The session is admitted (`ChatEngine.openSession`): register it on its connection's
    /// loop with this seed, then answer its upgrade.
    case sessionOpened(SessionID, SessionSeed)
    /// The session is refused: answer its upgrade with the refusal.
    case sessionRefused(SessionID, SessionRefusalReason)
    /// Background profile writes failed (this many users wait): call
    /// `ChatEngine.retryUnsavedUsers()` after a backoff.
    case userWritesFailed(Int)
    /// Look a sender's `clientMessageId` up in the store; answer with
    /// `ChatEngine.clientMessageLookedUp(_:_:now:monotonicNow:)`.
    case lookUpClientMessage(WriteID, sender: UserID, clientMessageID: String)
    /// Read a channel's messages for a viewer (ascending seq, as `Store.history`; `thread`:
    /// one thread's replies); answer with `ChatEngine.historyRead(_:_:)`.
    case readHistory(WriteID, channel: ChannelID, viewer: UserID, beforeSeq: Int64?, afterSeq: Int64?, limit: Int,
                     thread: Int64? = nil)
    /// Read the messages changed after a version (`Store.changes`); answer with
    /// `ChatEngine.changesRead(_:_:)`.
    case readChanges(WriteID, channel: ChannelID, viewer: UserID, afterVersion: Int64, limit: Int)
    /// Read the reactions and replies a viewer's page depends on (`Store.attributions`);
    /// answer with `ChatEngine.attributionsRead(_:_:)`.
    case readAttributions(WriteID, channel: ChannelID, seqs: ClosedRange<Int64>, users: Set<UserID>, viewer: UserID)
    /// Read whole message states (`Store.messageStates`); answer with
    /// `ChatEngine.messageStatesRead(_:_:now:monotonicNow:)`.
    case readMessageStates(WriteID, channel: ChannelID, seqs: [Int64])
    /// Send one event (its JSON text) to the channel's live sessions but `excluding` and
    /// the sessions of `skipping` (user numbers: the engine sends those their own).
    case publishChange(ChannelID, payload: [UInt8], skipping: Set<UserNumber>, excluding: SessionID?)
    /// Send one event (its JSON text) to the channel's live sessions of `users` (numbers)
    /// but `excluding`.
    case publishChangeToUsers(ChannelID, payload: [UInt8], users: Set<UserNumber>, excluding: SessionID?)
    /// After this long, call `ChatEngine.reactionWindowDue(_:seq:)`.
    case checkReactionsLater(ChannelID, seq: Int64, afterMilliseconds: Milliseconds)
    /// Take one token of `user`'s §6 rate from the limiter all nodes share; answer with
    /// `rateTaken`. `now` is wall-clock milliseconds (the nodes' common scale).
    /// With `slowMode`, the same answer also takes the channel's slow-mode slot of the user
    /// (§16), which no node may give twice within its interval. `ratePerSecond` 0: no rate.
    case takeRate(WriteID, user: UserID, ratePerSecond: Int, burst: Int, now: Milliseconds, slowMode: SlowModeAsk? = nil)
    /// Take one token of `user`'s §15 change rate (edits, deletes, reactions) from the
    /// limiter all nodes share; answer with `changeRateTaken`. `now` as for `takeRate`.
    case takeChangeRate(WriteID, user: UserID, ratePerSecond: Int, burst: Int, now: Milliseconds)
    /// Fan a `message.new` (its JSON text) out to the channel's live sessions but
    /// `excluding`, each checked against `origin` (§5).
    case publishMessage(ChannelID, payload: [UInt8], origin: MessageOrigin, excluding: SessionID?)
    /// Hand push events to the push sink (§9).
    case push([PushEvent])
    /// Hand a stored flag to the push sink (§16 `{"type":"flag",…}`).
    case pushFlag(Flag)
    /// In a cluster: tell the other nodes (`TypingRelay`); alone: nothing.
    case relayTyping(started: Bool, ChannelID, user: UserID)
    /// After this long, call `ChatEngine.typingDue(_:user:monotonicNow:)` (a typing state may expire).
    case checkTypingLater(ChannelID, user: UserID, afterMilliseconds: Milliseconds)
    /// After this long, call `ChatEngine.typingListDue(_:token:monotonicNow:)` (a channel's
    /// `typing.users` list may be due, or a typist in it stale).
    case checkTypingListLater(ChannelID, token: UInt64, afterMilliseconds: Milliseconds)
    /// A reader's `channel.read` was held back (`ReadEventPacing`): after this long, call
    /// `ChatEngine.readEventDue(_:user:monotonicNow:)`.
    case checkReadEventLater(ChannelID, user: UserID, afterMilliseconds: Milliseconds)
    /// A channel holds messages that arrived ahead of a missing one: after
    /// `ChatEngine.gapHoldMilliseconds`, call `ChatEngine.gapDue(_:afterSeq:)`.
    case checkGapLater(ChannelID, afterSeq: Int64)
    /// A ban ends at `untilMs`: after this long, call `ChatEngine.banDue(channel:user:now:)`
    /// (`channel` nil: the user's app-wide ban).
    case checkBanLater(channel: ChannelID?, user: UserID, afterMilliseconds: Milliseconds)
    /// Cluster mode: start following these channels' streams (subscribe), then read their
    /// state (`Store.streams(of:)`) and call `ChatEngine.streamsLoaded(_:_:monotonicNow:)`.
    case followChannels([ChannelID])
    /// Cluster mode: stop following these channels' streams (unsubscribe).
    case unfollowChannels([ChannelID])
    /// Cluster mode: after this long, call `ChatEngine.followingDue(now:)`.
    case checkFollowingLater(afterMilliseconds: Milliseconds)
    /// A line for the operations log; with `session`, the driver adds the fields that name
    /// that session's connection (`conn`).
    case log(LogLevel, String, [String: LogField], session: SessionID? = nil)
}
