// channel-feed.js: the sans-IO bookkeeping that hands one channel's messages to the app
// exactly once and in order, folds in their later changes once, and says which read
// (history or changes) must be made to fill a gap or catch up.

/**
 * One followed channel for the app. Sans-IO, like the Swift ChannelFeed: the client feeds it
 * live events, its own requests' answers and the pages it read; each call returns
 * `{ deliver, action }`: the items to hand out, in order, and the read to make next (or null):
 * `{ readHistoryAfterSeq }` or `{ readChangesAfterVersion }`. Items:
 *
 *   { type: "new", message }        a message not handed out before, in seq order (a reply too)
 *   { type: "updated", message }    a newer state of one handed out before (edit, delete,
 *                                   reply count, or whatever a catch-up found changed)
 *   { type: "reactions", reaction } live reaction counts of one handed out before:
 *                                   { channelId, seq, userId, kind, reactions, added }
 *
 * Two cursors. `lastSeq` is the last message handed out as new. Seqs are gapless in the store
 * but not in what a user sees (a 1-to-1 message hidden by a block never arrives), so a gap
 * is settled by a read after the cursors: what it does not return up to the message that
 * showed the gap is hidden. `version` (PROTOCOL.md §15) is the channel version up to which
 * every change this user can see has reached the feed; a catch-up reads `message.changes`
 * after it. The gateway sends one channel's events to a connection in version order, so a
 * live `message.new` or `message.updated` at version v moves it to v − 1 (a reply and its
 * parent's reply count share v: the second event may still be on its way); a reaction event
 * carries no version and moves nothing.
 *
 * Each message state carries its `version`; a state is handed out only when it is newer than
 * the last one handed out of that message, so a change that arrives both live and in a read
 * (or as an answer and as an event) goes out once. Without a version (a gateway before v1.2,
 * which answers `message.changes` with ERR_UNKNOWN_TYPE) the feed reads history only.
 */
export class ChannelFeed {
  /**
   * @param {number} afterSeq  the last message the app has; the feed hands out what follows it
   * @param {{version?: number|null, backfill?: boolean}} [options]  `version`: the channel version
   *   the app's messages are current to (null: none, a gateway before v1.2); `backfill`: the
   *   messages after `afterSeq` are older than `version`, read them from history first
   */
  constructor(afterSeq, { version = null, backfill = false } = {}) {
    this.lastSeq = afterSeq;
    this.version = version;
    this.settled = version ?? 0; // every state up to this version has been handed out
    this.handedOut = new Map(); // seq → version of the last state handed out, above `settled`
    this.held = new Map(); // seq → message past lastSeq that arrived ahead of a gap or during a read
    this.heldReactions = []; // reaction events that came during a read or ahead of their message
    this.liveDuringRead = 0; // the newest version a live event showed during a read
    this.backfilling = backfill && version !== null;
    this.reading = false;
  }

  // MARK: what arrives

  /** A new message: `message.new` (`live`) or a send's answer. */
  received(message, { live = true } = {}) {
    const deliver = [];
    if (message.seq <= this.lastSeq) {
      if (live) this.sawLive(message.version);
      return { deliver, action: null };
    }
    if (this.reading || message.seq !== this.lastSeq + 1) return { deliver, action: this.holdAndRead(message, live) };
    this.handOutNew(message, deliver);
    if (live) this.sawLive(message.version);
    this.drainHeld(true, deliver);
    return { deliver, action: null };
  }

  /** A newer state of a message: `message.updated` (`live`) or the answer to an edit, delete or reaction. */
  updated(message, { live = true } = {}) {
    const deliver = [];
    // Its message.new has not come (a gap, or a read is on): it goes out as new.
    if (message.seq > this.lastSeq) return { deliver, action: this.holdAndRead(message, live) };
    this.handOutUpdate(message, deliver);
    if (live) this.sawLive(message.version);
    return { deliver, action: null };
  }

  /** `reaction.added` / `reaction.removed`, as `{ channelId, seq, userId, kind, reactions, added }`. */
  reacted(reaction) {
    const deliver = [];
    if (this.reading || reaction.seq > this.lastSeq) {
      // After the read: its counts must not be overtaken by an older state the read finds.
      this.heldReactions.push(reaction);
      return { deliver, action: this.startReading() };
    }
    deliver.push({ type: "reactions", reaction });
    return { deliver, action: null };
  }

  /** The connection came back, or the gateway may have missed events: read after the cursors. */
  catchUp() {
    return this.startReading();
  }

  // MARK: reads

  /** A history page read after `lastSeq` (ascending), and whether more may follow. */
  historyRead(page, more) {
    const deliver = [];
    for (const message of page) {
      if (message.seq <= this.lastSeq) continue;
      this.held.delete(message.seq);
      this.handOutNew(message, deliver);
    }
    if (more && page.length > 0) return { deliver, action: { readHistoryAfterSeq: this.lastSeq } };
    // Everything visible up to the newest held message has been read: what history did not
    // return below it is hidden from this user.
    this.drainHeld(false, deliver);
    if (this.backfilling) {
      this.backfilling = false;
      return { deliver, action: { readChangesAfterVersion: this.version } };
    }
    this.finishRead(null, deliver);
    return { deliver, action: null };
  }

  /** A `message.changes` result `{ messages, version, next }` read after `version`. */
  changesRead(page) {
    const deliver = [];
    const messages = page.messages || [];
    for (const message of messages) {
      if (message.seq > this.lastSeq) this.hold(message);
      else this.handOutUpdate(message, deliver);
    }
    // More may follow (a page can be short, even empty: changes hidden from this user take
    // versions too); a `next` that does not move on would read the same page forever.
    if (typeof page.next === "number" && page.next > (this.version ?? 0)) {
      // Read up to `next`: a drop from here on starts after it.
      this.version = page.next;
      return { deliver, action: { readChangesAfterVersion: page.next } };
    }
    // Everything created or changed up to `page.version` has been read: the held messages go
    // out in seq order, and what the read did not return below them is hidden.
    this.drainHeld(false, deliver);
    this.finishRead(page.version, deliver);
    return { deliver, action: null };
  }

  /** A read failed (the connection went): the next `catchUp` starts it again; what was held stays held. */
  readFailed() {
    this.reading = false;
    this.liveDuringRead = 0;
  }

  /** The first version's name for `readFailed`. */
  historyFailed() {
    this.readFailed();
  }

  /** The gateway answered `message.changes` with ERR_UNKNOWN_TYPE (before v1.2): history only from now on. */
  changesUnsupported() {
    this.version = null;
    this.backfilling = false;
    return { readHistoryAfterSeq: this.lastSeq };
  }

  // MARK: inside

  /** A message past `lastSeq` that cannot go out yet: held until a read settles what comes before it. */
  holdAndRead(message, live) {
    this.hold(message);
    const action = this.startReading();
    if (live) this.sawLive(message.version);
    return action;
  }

  startReading() {
    if (this.reading) return null;
    this.reading = true;
    this.liveDuringRead = 0;
    if (this.backfilling || this.version === null) return { readHistoryAfterSeq: this.lastSeq };
    return { readChangesAfterVersion: this.version };
  }

  finishRead(current, deliver) {
    this.reading = false;
    if (current !== null && current !== undefined && this.version !== null) {
      this.version = Math.max(this.version, current, this.liveDuringRead);
      this.settle(current);
    }
    this.liveDuringRead = 0;
    // Reactions of messages the read did not hand out are of hidden ones: dropped.
    const reactions = this.heldReactions;
    this.heldReactions = [];
    for (const reaction of reactions) if (reaction.seq <= this.lastSeq) deliver.push({ type: "reactions", reaction });
  }

  /**
   * A live event showed `eventVersion`: every change before it has reached this connection.
   * Not every change at it: a reply and its parent's new `replyCount` share one version, and
   * the second event may still be on its way.
   */
  sawLive(eventVersion) {
    if (this.version === null || typeof eventVersion !== "number") return;
    const complete = eventVersion - 1;
    if (this.reading) {
      this.liveDuringRead = Math.max(this.liveDuringRead, complete);
    } else {
      this.version = Math.max(this.version, complete);
      this.settle(this.version);
    }
  }

  /** Every state up to `settled` has been handed out: only states handed out ahead of it need remembering. */
  settle(settled) {
    if (settled <= this.settled) return;
    this.settled = settled;
    for (const [seq, version] of this.handedOut) if (version <= settled) this.handedOut.delete(seq);
  }

  hold(message) {
    const kept = this.held.get(message.seq);
    if (kept && (kept.version ?? 0) >= (message.version ?? 0)) return;
    this.held.set(message.seq, message);
  }

  isNewer(message) {
    return (message.version ?? 0) > Math.max(this.settled, this.handedOut.get(message.seq) ?? 0);
  }

  handOutNew(message, deliver) {
    deliver.push({ type: "new", message });
    this.lastSeq = message.seq;
    if ((message.version ?? 0) > this.settled) this.handedOut.set(message.seq, message.version);
  }

  handOutUpdate(message, deliver) {
    if (!this.isNewer(message)) return;
    deliver.push({ type: "updated", message });
    this.handedOut.set(message.seq, message.version);
  }

  drainHeld(contiguousOnly, deliver) {
    while (this.held.size > 0) {
      const next = this.held.get(this.lastSeq + 1);
      if (next) {
        this.held.delete(next.seq);
        this.handOutNew(next, deliver);
        continue;
      }
      if (contiguousOnly) return;
      const lowest = Math.min(...this.held.keys());
      const message = this.held.get(lowest);
      this.held.delete(lowest);
      if (lowest > this.lastSeq) this.handOutNew(message, deliver);
    }
  }
}

/**
 * `message` with a live reaction change folded in: the event's counts and, when `ownUserId`
 * reacted, its own kinds. A tombstone keeps no reactions, so an event that was on its way
 * when the message was deleted changes nothing. Returns a new object.
 */
export function applyReaction(message, reaction, ownUserId) {
  if (!message || message.channelId !== reaction.channelId || message.seq !== reaction.seq || message.deletedAt) return message;
  const reactions = Object.fromEntries(Object.entries(reaction.reactions || {}).filter(([, count]) => count > 0));
  let ownReactions = message.ownReactions || [];
  if (ownUserId && reaction.userId === ownUserId) {
    ownReactions = ownReactions.filter((kind) => kind !== reaction.kind);
    if (reaction.added) ownReactions.push(reaction.kind);
  }
  return { ...message, reactions, ownReactions };
}
