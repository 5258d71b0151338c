// event-listeners.js: the app's listeners on a client, by event name ("*" for every
// event, "state" for the connection's own changes) and by channel. A listener that
// throws is logged and does not keep the others from their call.

/** The channel an event is about, if any. */
function channelOf(name, data) {
  if (!data) return null;
  if (name === "channel.updated") return data.id ?? null;
  return data.channelId ?? null;
}

export class EventListeners {
  constructor() {
    this.byName = new Map(); // event name, "*" or "state" → Set<fn>
    this.byChannel = new Map(); // channelId → Set<fn>
  }

  /** Adds `listener` for `name`; returns a function that removes it. */
  on(name, listener) {
    if (!this.byName.has(name)) this.byName.set(name, new Set());
    this.byName.get(name).add(listener);
    return () => this.off(name, listener);
  }

  off(name, listener) {
    this.byName.get(name)?.delete(listener);
  }

  /** Adds `listener` for the events about `channelId`; returns a function that removes it. */
  onChannel(channelId, listener) {
    if (!this.byChannel.has(channelId)) this.byChannel.set(channelId, new Set());
    this.byChannel.get(channelId).add(listener);
    return () => this.byChannel.get(channelId)?.delete(listener);
  }

  /** Calls the listeners of `name` with `data`. */
  emit(name, data) {
    for (const listener of [...(this.byName.get(name) || [])]) {
      try {
        listener(data);
      } catch (error) {
        console.error(`chat-client: a "${name}" listener threw`, error);
      }
    }
  }

  /** A gateway event: to its own listeners, to "*" and to those of the channel it is about. */
  publish(name, data) {
    this.emit(name, data);
    this.emit("*", { event: name, data });
    const channelId = channelOf(name, data);
    for (const listener of [...(this.byChannel.get(channelId) || [])]) {
      try {
        listener({ event: name, data });
      } catch (error) {
        console.error("chat-client: a channel listener threw", error);
      }
    }
  }
}
