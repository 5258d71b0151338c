// channel-feed.js: the sans-IO bookkeeping that hands one channel's messages to the app
// exactly once and in order, and says when history must be read to fill a gap.

/**
 * One followed channel's messages for the app: every message it can see, exactly once, in
 * `seq` order, across reconnects. Sans-IO, like the Swift ChannelFeed: the client feeds it
 * live messages, sent messages and history pages; it returns what to deliver and, when it
 * must read history, `{ readHistoryAfterSeq }`.
 *
 * Seqs are gapless in the store but not in what a user sees (a 1-to-1 message hidden by a
 * block never arrives), so a gap is settled by reading history after the last delivered
 * seq: what history does not return up to the message that showed the gap is hidden.
 */
export class ChannelFeed {
  constructor(afterSeq) {
    this.lastSeq = afterSeq;
    this.held = new Map(); // seq → live message that arrived ahead of a gap or during a read
    this.reading = false;
  }

  /** A message from `message.new` or a send's answer. Returns `{ deliver, action }`. */
  received(message) {
    const deliver = [];
    if (message.seq <= this.lastSeq) return { deliver, action: null };
    if (this.reading || message.seq !== this.lastSeq + 1) {
      this.held.set(message.seq, message);
      return { deliver, action: this.startReading() };
    }
    this.append(message, deliver);
    this.drainHeld(true, deliver);
    return { deliver, action: null };
  }

  /** The connection came back, or the gateway may have missed events: read after the last delivered. */
  catchUp() {
    return this.startReading();
  }

  /** A history page read after `lastSeq` (ascending), and whether more may follow. */
  historyRead(page, more) {
    const deliver = [];
    for (const message of page) {
      if (message.seq <= this.lastSeq) continue;
      this.held.delete(message.seq);
      this.append(message, deliver);
    }
    if (more && page.length > 0) return { deliver, action: { readHistoryAfterSeq: this.lastSeq } };
    this.reading = false;
    // Everything visible up to the newest held message has been read: what history did
    // not return below it is hidden from this user.
    this.drainHeld(false, deliver);
    return { deliver, action: null };
  }

  /** A history read failed (the connection went): the next `catchUp` starts it again. */
  historyFailed() {
    this.reading = false;
  }

  startReading() {
    if (this.reading) return null;
    this.reading = true;
    return { readHistoryAfterSeq: this.lastSeq };
  }

  append(message, deliver) {
    deliver.push(message);
    this.lastSeq = message.seq;
  }

  drainHeld(contiguousOnly, deliver) {
    while (this.held.size > 0) {
      const next = this.held.get(this.lastSeq + 1);
      if (next) {
        this.held.delete(next.seq);
        this.append(next, deliver);
        continue;
      }
      if (contiguousOnly) return;
      const lowest = Math.min(...this.held.keys());
      const message = this.held.get(lowest);
      this.held.delete(lowest);
      if (lowest > this.lastSeq) this.append(message, deliver);
    }
  }
}
