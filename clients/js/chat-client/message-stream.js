// message-stream.js: what `client.messages(…)` hands the app, as an async iterable or
// through a listener.

/**
 * What `client.messages(…)` returns: an async iterable of Messages (`for await … of`), or,
 * with `onMessage`, a listener that gets each message as it is delivered. `close()` (or
 * leaving a `for await` loop) stops it; it also ends when the client closes for good.
 */
export class MessageStream {
  constructor(onMessage, stop) {
    this.onMessage = onMessage || null;
    this.stop = stop;
    this.queue = [];
    this.waiters = [];
    this.done = false;
    this.failure = null;
    /** Resolves once the stream knows where it starts (a `channel.get` when no `afterSeq` was given). */
    this.ready = null;
  }

  push(message) {
    if (this.done) return;
    if (this.onMessage) {
      try {
        this.onMessage(message);
      } catch (error) {
        console.error("chat-client: an onMessage listener threw", error);
      }
    } else if (this.waiters.length) {
      this.waiters.shift().resolve({ value: message, done: false });
    } else {
      this.queue.push(message);
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
