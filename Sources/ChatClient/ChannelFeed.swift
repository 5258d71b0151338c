/// One followed channel for the app: every message it can see once as `.new`, in `seq` order,
/// and every later change of those messages once, across reconnects. Sans-IO: the client feeds
/// it live events, its own requests' answers and the pages it read, and it says what to hand
/// out and which read to make next.
///
/// Two cursors. `lastSeq` is the last message handed out as new. Seqs are gapless in the store
/// but not in what a user sees (a 1-to-1 message hidden by a block never arrives), so a gap is
/// settled by a read after the cursors: what the read does not return up to the message that
/// showed the gap is hidden. `version` (PROTOCOL.md §15) is the channel version up to which
/// every change this user can see has reached the feed; a catch-up reads `message.changes`
/// after it. The gateway sends one channel's events to a connection in version order, so a
/// live `message.new` or `message.updated` at version v moves `version` to v − 1 (a reply and
/// its parent's reply count share v: the second event may still be on its way); a reaction
/// event carries no version and moves nothing (its change is read again after a drop, and
/// folded once).
///
/// Each message state carries its `version`; the feed hands out a state only when it is newer
/// than the last one it handed out of that message, so a change that arrives both live and
/// in a read (or both as an answer and as an event) goes out once.
///
/// Without a version (a gateway before v1.2, which answers `message.changes` with
/// `ERR_UNKNOWN_TYPE`) the feed reads `message.history` after `lastSeq` and has no updates.
struct ChannelFeed: Sendable {
    enum Action: Equatable, Sendable {
        /// Read `message.history` after this seq (and feed the page to `historyRead`).
        case readHistory(afterSeq: Int64)
        /// Read `message.changes` after this version (and feed the page to `changesRead`).
        case readChanges(afterVersion: Int64)
    }

    private(set) var lastSeq: Int64
    /// Nil: the gateway has no versions; history reads only.
    private(set) var version: Int64?
    /// Every state up to this version has been handed out: an older one is stale. A completed
    /// read, or a live event while no read is on, moves it.
    private var settled: Int64
    /// Seq → version of the last state handed out, for states newer than `settled`.
    private var handedOut: [Int64: Int64] = [:]
    /// Messages past `lastSeq` that arrived ahead of a gap or during a read, by seq (newest state).
    private var held: [Int64: Message] = [:]
    /// Reaction events that came during a read or ahead of their message, in arrival order.
    private var heldReactions: [ReactionUpdate] = []
    /// The newest version a live event showed during a read: `version` once the read is done.
    private var liveDuringRead: Int64 = 0
    /// Read history after `lastSeq` first, then changes after `version`: a start at a seq
    /// whose version the app does not know.
    private var backfilling: Bool
    private(set) var reading = false

    /// - Parameters:
    ///   - afterSeq: the last message the app has; the feed hands out what follows it.
    ///   - version: the channel version the app's messages are current to (nil: none, a
    ///     gateway before v1.2).
    ///   - backfill: the messages after `afterSeq` are older than `version`: read them from
    ///     history before the changes.
    init(afterSeq: Int64, version: Int64? = nil, backfill: Bool = false) {
        lastSeq = afterSeq
        self.version = version
        settled = version ?? 0
        backfilling = backfill && version != nil
    }

    // MARK: what arrives

    /// A new message: `message.new` (`live`) or a send's answer.
    mutating func received(_ message: Message, live: Bool = true, deliver: inout [MessageFeedItem]) -> Action? {
        guard message.seq > lastSeq else {
            if live { sawLive(message.version) }
            return nil
        }
        if reading || message.seq != lastSeq + 1 { return holdAndRead(message, live: live) }
        handOutNew(message, to: &deliver)
        if live { sawLive(message.version) }
        drainHeld(contiguousOnly: true, into: &deliver)
        return nil
    }

    /// A newer state of a message: `message.updated` (`live`) or the answer to an edit, a
    /// delete or a reaction.
    mutating func updated(_ message: Message, live: Bool = true, deliver: inout [MessageFeedItem]) -> Action? {
        // Its `message.new` has not come (a gap, or a read is on): it goes out as new.
        if message.seq > lastSeq { return holdAndRead(message, live: live) }
        handOutUpdate(message, to: &deliver)
        if live { sawLive(message.version) }
        return nil
    }

    /// `reaction.added` / `reaction.removed`.
    mutating func reacted(_ update: ReactionUpdate, deliver: inout [MessageFeedItem]) -> Action? {
        if reading || update.seq > lastSeq {
            // After the read: its counts must not be overtaken by an older state the read finds.
            heldReactions.append(update)
            return startReading()
        }
        deliver.append(.reactions(update))
        return nil
    }

    /// The connection came back, or the gateway said it may have missed events: read what came
    /// after the cursors.
    mutating func catchUp() -> Action? {
        startReading()
    }

    // MARK: reads

    /// A history page read after `lastSeq` (ascending), and whether more may follow.
    mutating func historyRead(_ page: [Message], more: Bool, deliver: inout [MessageFeedItem]) -> Action? {
        for message in page where message.seq > lastSeq {
            held[message.seq] = nil
            handOutNew(message, to: &deliver)
        }
        if more && !page.isEmpty { return .readHistory(afterSeq: lastSeq) }
        // Everything visible up to the newest held message has been read: what history did not
        // return below it is hidden from this user.
        drainHeld(contiguousOnly: false, into: &deliver)
        if backfilling, let version {
            backfilling = false
            return .readChanges(afterVersion: version)
        }
        finishRead(caughtUpTo: nil, deliver: &deliver)
        return nil
    }

    /// A `message.changes` page read after `version` (ascending version).
    mutating func changesRead(_ page: ChangesPage, deliver: inout [MessageFeedItem]) -> Action? {
        for message in page.messages {
            if message.seq > lastSeq {
                hold(message)
            } else {
                handOutUpdate(message, to: &deliver)
            }
        }
        // More may follow (a page can be short, even empty: changes hidden from this user take
        // versions too); a `next` that does not move on would read the same page forever.
        if let next = page.next, next > (version ?? 0) {
            // Read up to `next`: a drop from here on starts after it.
            version = next
            return .readChanges(afterVersion: next)
        }
        // Every message created or changed up to `page.version` has been read: the held ones go
        // out in seq order, and what the read did not return below them is hidden.
        drainHeld(contiguousOnly: false, into: &deliver)
        finishRead(caughtUpTo: page.version, deliver: &deliver)
        return nil
    }

    /// A read failed (the connection went): the next `catchUp` starts it again from the
    /// cursors; what was held stays held.
    mutating func readFailed() {
        reading = false
        liveDuringRead = 0
    }

    /// The gateway answered `message.changes` with `ERR_UNKNOWN_TYPE` (before v1.2): from now
    /// on the feed reads history only.
    mutating func changesUnsupported() -> Action? {
        version = nil
        backfilling = false
        return .readHistory(afterSeq: lastSeq)
    }

    // MARK: inside

    /// A message past `lastSeq` that cannot go out yet: held until a read settles what comes
    /// before it (the read starts unless one is on).
    private mutating func holdAndRead(_ message: Message, live: Bool) -> Action? {
        hold(message)
        let action = startReading()
        if live { sawLive(message.version) }
        return action
    }

    private mutating func startReading() -> Action? {
        guard !reading else { return nil }
        reading = true
        liveDuringRead = 0
        if backfilling || version == nil { return .readHistory(afterSeq: lastSeq) }
        return .readChanges(afterVersion: version ?? 0)
    }

    private mutating func finishRead(caughtUpTo current: Int64?, deliver: inout [MessageFeedItem]) {
        reading = false
        if let current, let known = version {
            version = max(known, current, liveDuringRead)
            settle(upTo: current)
        }
        liveDuringRead = 0
        // Reactions of messages the read did not hand out are of hidden ones: dropped.
        let reactions = heldReactions
        heldReactions = []
        for update in reactions where update.seq <= lastSeq { deliver.append(.reactions(update)) }
    }

    /// A live event showed `eventVersion`: every change before it has reached this connection.
    /// Not every change at it: a reply and its parent's new `replyCount` share one version, and
    /// the second event may still be on its way.
    private mutating func sawLive(_ eventVersion: Int64) {
        guard let known = version else { return }
        let complete = eventVersion - 1
        if reading {
            liveDuringRead = max(liveDuringRead, complete)
        } else {
            version = max(known, complete)
            settle(upTo: max(known, complete))
        }
    }

    /// Every state up to `upTo` has been handed out: older ones are stale from now on, and only
    /// the states handed out ahead of it (an answer before its event) need remembering.
    private mutating func settle(upTo newSettled: Int64) {
        guard newSettled > settled else { return }
        settled = newSettled
        if !handedOut.isEmpty { handedOut = handedOut.filter { $0.value > newSettled } }
    }

    private mutating func hold(_ message: Message) {
        if let kept = held[message.seq], kept.version >= message.version { return }
        held[message.seq] = message
    }

    private func isNewer(_ message: Message) -> Bool {
        message.version > max(settled, handedOut[message.seq] ?? 0)
    }

    private mutating func handOutNew(_ message: Message, to deliver: inout [MessageFeedItem]) {
        deliver.append(.new(message))
        lastSeq = message.seq
        if message.version > settled { handedOut[message.seq] = message.version }
    }

    private mutating func handOutUpdate(_ message: Message, to deliver: inout [MessageFeedItem]) {
        guard isNewer(message) else { return }
        deliver.append(.updated(message))
        handedOut[message.seq] = message.version
    }

    private mutating func drainHeld(contiguousOnly: Bool, into deliver: inout [MessageFeedItem]) {
        while !held.isEmpty {
            if let next = held.removeValue(forKey: lastSeq + 1) {
                handOutNew(next, to: &deliver)
            } else if !contiguousOnly, let lowest = held.keys.min() {
                if lowest <= lastSeq {
                    held[lowest] = nil
                } else if let message = held.removeValue(forKey: lowest) {
                    handOutNew(message, to: &deliver)
                }
            } else {
                return
            }
        }
    }
}
