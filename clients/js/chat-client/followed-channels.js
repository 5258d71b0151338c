// followed-channels.js: the channels a client follows with message streams. Each has a
// ChannelFeed, the streams it hands items to, and at most one read in flight: the
// `message.changes` (or, before v1.2, `message.history`) reads that fill a gap and catch a
// channel up after a reconnect or `session.resync`.

import { ChannelFeed } from "./channel-feed.js";
import { ConnectionState } from "./connection-state.js";
import { ChatError } from "./errors.js";
import { MessageStream } from "./message-stream.js";
import { sleep } from "./sleep.js";

export class FollowedChannels {
  /** `client`: the ChatClient whose requests read history and whose events report a failed catch-up. */
  constructor(client) {
    this.client = client;
    this.feeds = new Map(); // channelId → { feed, streams: Set<MessageStream>, read: object|null }
  }

  /** ChatClient.messages: a new MessageStream of `channelId`. */
  follow(channelId, { afterSeq, afterVersion, onItem, onMessage } = {}) {
    const stream = new MessageStream({ onItem, onMessage }, (closed) => this.stopStream(channelId, closed));
    const state = this.client.state;
    if (state === ConnectionState.closed || state === ConnectionState.idle) {
      stream.ready = Promise.reject(new ChatError("ERR_NOT_CONNECTED", "not connected: call connect() first"));
      stream.ready.catch((error) => stream.finish(error));
      return stream;
    }
    const join = (makeFeed) => {
      if (stream.done) return;
      let entry = this.feeds.get(channelId);
      if (!entry) {
        entry = { feed: makeFeed(), streams: new Set(), read: null };
        this.feeds.set(channelId, entry);
        entry.streams.add(stream);
        this.catchUp(channelId); // whatever came after the start (nothing, usually)
      } else {
        entry.streams.add(stream);
      }
    };
    if (this.feeds.has(channelId) || (afterSeq !== undefined && afterVersion !== undefined)) {
      join(() => new ChannelFeed(afterSeq ?? 0, { version: afterVersion ?? null }));
      stream.ready = Promise.resolve();
    } else {
      // Where the channel stands now: its version (0 before v1.2: the first changes read
      // then falls back to history), and its newest message.
      stream.ready = this.client.channel(channelId).then((channel) => join(() => (afterSeq !== undefined
        ? new ChannelFeed(afterSeq, { version: channel.version ?? 0, backfill: true })
        : new ChannelFeed(channel.lastMessage?.seq ?? 0, { version: channel.version ?? 0 }))));
      stream.ready.catch((error) => stream.finish(error));
    }
    return stream;
  }

  stopStream(channelId, stream) {
    const entry = this.feeds.get(channelId);
    if (!entry) return;
    entry.streams.delete(stream);
    if (entry.streams.size === 0) this.feeds.delete(channelId);
  }

  /** A new message that arrived live (`live`) or answered a send. */
  received(message, { live = true } = {}) {
    this.step(message.channelId, (feed) => feed.received(message, { live }));
  }

  /** A newer state of a message: `message.updated` (`live`), or the answer to an edit, delete or reaction. */
  updated(message, { live = true } = {}) {
    this.step(message.channelId, (feed) => feed.updated(message, { live }));
  }

  /** `reaction.added` / `reaction.removed` with `added` set. */
  reacted(reaction) {
    this.step(reaction.channelId, (feed) => feed.reacted(reaction));
  }

  /** Runs one transition of a channel's feed: hands out what it delivers, then starts the read it asks for. */
  step(channelId, transition) {
    const entry = this.feeds.get(channelId);
    if (!entry) return;
    const { deliver, action } = transition(entry.feed);
    this.hand(entry, deliver);
    if (action) this.read(channelId, entry, action);
  }

  /** Reads what a followed channel got after the feed's cursors. */
  catchUp(channelId) {
    const entry = this.feeds.get(channelId);
    if (!entry || this.client.state !== ConnectionState.open) return;
    const action = entry.feed.catchUp();
    if (action) this.read(channelId, entry, action);
  }

  /** A new connection: every followed channel catches up. */
  catchUpAll() {
    for (const channelId of this.feeds.keys()) this.catchUp(channelId);
  }

  /** The connection dropped: the reads in flight are stale; the next connection's catch-up starts them again. */
  connectionLost() {
    for (const entry of this.feeds.values()) {
      entry.read = null;
      entry.feed.readFailed();
    }
  }

  /** The client closed for good: every stream ends. */
  finishAll() {
    for (const entry of this.feeds.values()) for (const stream of entry.streams) stream.finish();
    this.feeds.clear();
  }

  /** Makes the read a feed asked for (`{ readHistoryAfterSeq }` or `{ readChangesAfterVersion }`) and feeds its page back. */
  async read(channelId, entry, action) {
    const read = {}; // this read; a lost connection or a newer read makes it stale
    entry.read = read;
    const stale = () => entry.read !== read || this.feeds.get(channelId) !== entry;
    const changes = action.readChangesAfterVersion !== undefined;
    const limit = this.client.options.historyPageSize;
    let page;
    for (;;) {
      try {
        page = changes
          ? await this.client.request("message.changes", { channelId, afterVersion: action.readChangesAfterVersion, limit }, { retriable: false })
          : await this.client.request("message.history", { channelId, afterSeq: action.readHistoryAfterSeq, limit }, { retriable: false });
        break;
      } catch (error) {
        if (stale()) return;
        if (error.code === "ERR_RATE_LIMITED") {
          await sleep(Math.max(error.retryAfterMs ?? 100, 1));
          if (stale()) return;
          continue;
        }
        entry.read = null;
        if (changes && error.code === "ERR_UNKNOWN_TYPE") {
          // A gateway before v1.2: new messages from history, no changes.
          this.read(channelId, entry, entry.feed.changesUnsupported());
          return;
        }
        // The connection went (its reconnect catches up again) or the channel is gone.
        entry.feed.readFailed();
        if (error.code !== "ERR_DISCONNECTED" && error.code !== "ERR_NOT_CONNECTED") {
          this.client.events.emit("catchUp.error", { channelId, error });
        }
        return;
      }
    }
    if (stale()) return;
    entry.read = null;
    const { deliver, action: next } = changes
      ? entry.feed.changesRead(page)
      : entry.feed.historyRead(page.messages || [], Boolean(page.next));
    this.hand(entry, deliver);
    if (next) this.read(channelId, entry, next);
  }

  /** Hands delivered items to every stream of the channel. */
  hand(entry, items) {
    for (const item of items) {
      for (const stream of [...entry.streams]) stream.push(item);
    }
  }
}
