// followed-channels.js: the channels a client follows with message streams. Each has a
// ChannelFeed, the streams it hands messages to, and at most one history read in flight:
// the reads that fill a gap and catch a channel up after a reconnect or `session.resync`.

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
  follow(channelId, { afterSeq, onMessage } = {}) {
    const stream = new MessageStream(onMessage, (closed) => this.stopStream(channelId, closed));
    const state = this.client.state;
    if (state === ConnectionState.closed || state === ConnectionState.idle) {
      stream.ready = Promise.reject(new ChatError("ERR_NOT_CONNECTED", "not connected: call connect() first"));
      stream.ready.catch((error) => stream.finish(error));
      return stream;
    }
    const join = (start) => {
      if (stream.done) return;
      let entry = this.feeds.get(channelId);
      if (!entry) {
        entry = { feed: new ChannelFeed(start), streams: new Set(), read: null };
        this.feeds.set(channelId, entry);
        entry.streams.add(stream);
        this.catchUp(channelId); // whatever came after `start` (nothing, when it is the newest)
      } else {
        entry.streams.add(stream);
      }
    };
    if (afterSeq !== undefined || this.feeds.has(channelId)) {
      join(afterSeq ?? 0);
      stream.ready = Promise.resolve();
    } else {
      stream.ready = this.client.channel(channelId).then((channel) => join(channel.lastMessage?.seq ?? 0));
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

  /** A message that arrived live or answered a send. */
  received(message) {
    const entry = this.feeds.get(message.channelId);
    if (!entry) return;
    const { deliver, action } = entry.feed.received(message);
    this.hand(entry, deliver);
    if (action) this.readHistory(message.channelId, entry, action.readHistoryAfterSeq);
  }

  /** Reads what a followed channel got after the last message handed to the app. */
  catchUp(channelId) {
    const entry = this.feeds.get(channelId);
    if (!entry || this.client.state !== ConnectionState.open) return;
    const action = entry.feed.catchUp();
    if (action) this.readHistory(channelId, entry, action.readHistoryAfterSeq);
  }

  /** A new connection: every followed channel catches up. */
  catchUpAll() {
    for (const channelId of this.feeds.keys()) this.catchUp(channelId);
  }

  /** The connection dropped: the reads in flight are stale; the next connection's catch-up starts them again. */
  connectionLost() {
    for (const entry of this.feeds.values()) {
      entry.read = null;
      entry.feed.historyFailed();
    }
  }

  /** The client closed for good: every stream ends. */
  finishAll() {
    for (const entry of this.feeds.values()) for (const stream of entry.streams) stream.finish();
    this.feeds.clear();
  }

  async readHistory(channelId, entry, afterSeq) {
    const read = {}; // this read; a lost connection or a newer read makes it stale
    entry.read = read;
    let page;
    for (;;) {
      try {
        page = await this.client.request("message.history",
          { channelId, afterSeq, limit: this.client.options.historyPageSize }, { retriable: false });
        break;
      } catch (error) {
        if (entry.read !== read || this.feeds.get(channelId) !== entry) return;
        if (error.code === "ERR_RATE_LIMITED") {
          await sleep(Math.max(error.retryAfterMs ?? 100, 1));
          if (entry.read !== read || this.feeds.get(channelId) !== entry) return;
          continue;
        }
        // The connection went (its reconnect catches up again) or the channel is gone.
        entry.read = null;
        entry.feed.historyFailed();
        if (error.code !== "ERR_DISCONNECTED" && error.code !== "ERR_NOT_CONNECTED") {
          this.client.events.emit("catchUp.error", { channelId, error });
        }
        return;
      }
    }
    if (entry.read !== read || this.feeds.get(channelId) !== entry) return;
    entry.read = null;
    const { deliver, action } = entry.feed.historyRead(page.messages || [], Boolean(page.next));
    this.hand(entry, deliver);
    if (action) this.readHistory(channelId, entry, action.readHistoryAfterSeq);
  }

  /** Hands delivered messages to every stream of the channel. */
  hand(entry, messages) {
    for (const message of messages) {
      for (const stream of [...entry.streams]) stream.push(message);
    }
  }
}
