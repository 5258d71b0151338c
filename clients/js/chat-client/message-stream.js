// message-stream.js: what `client.messages(…)` hands the app, as an async iterable or
// through a listener.

/**
 * What `client.messages(…)` returns: an async iterable of feed items (`for await … of`):
 * `{ type: "new", message }`, `{ type: "updated", message }`, `{ type: "reactions", reaction }`
 * (ChannelFeed). With `onItem`, a listener gets each item as it is delivered instead; with
 * `onMessage` (the form before v1.2), a listener gets the message of each "new" item only.
 * `close()` (or leaving a `for await` loop) stops it; it also ends when the client closes for good.
 */
export class MessageStream {
  constructor({ onItem, onMessage } = {}, stop) {
    this.onItem = onItem || null;
    this.onMessage = onMessage || null;
    this.stop = stop;
    this.queue = [];
    this.waiters = [];
    this.done = false;
    this.failure = null;
    /** Resolves once the stream knows where it starts (a `channel.get` unless both `afterSeq` and `afterVersion` were given). */
    this.ready = null;
  }

  push(item) {
    if (this.done) return;
    if (this.onItem || this.onMessage) {
      try {
        if (this.onItem) this.onItem(item);
        else if (item.type === "new") this.onMessage(item.message);
      } catch (error) {
        console.error("chat-client: a messages() listener threw", error);
      }
    } else if (this.waiters.length) {
      this.waiters.shift().resolve({ value: item, done: false });
    } else {
      this.queue.push(item);
    }
  }

  /** Ends the stream; with an `error`, a waiting or next `next()` rejects with it. */
  finish(error = null) {
    if (this.done) return;
    this.done = true;
    this.failure = error;
    for (const waiter of this.waiters.splice(0)) {
      if (error) waiter.reject(error);
      else waiter.resolve({ value: undefined, done: true });
    }
  }

  close() {
    this.finish();
    this.stop(this);
  }

  next() {
    if (this.queue.length) return Promise.resolve({ value: this.queue.shift(), done: false });
    if (this.done) return this.failure ? Promise.reject(this.failure) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  return() {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}
