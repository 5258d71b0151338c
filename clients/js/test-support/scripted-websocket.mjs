// A stand-in for the gateway behind a browser-style WebSocket class, for the JS SDK's unit
// tests that need no gateway binary: one channel "c" kept in memory with the §15 rules the
// client depends on (seq and version counters, a reply taking one version for itself and
// its parent, tombstones, reaction counts, message.changes paging over `next`). Like the
// gateway, it sends a change's events to the connection before the answer to the request
// that made it. A test can drop the connection and change the channel while the client is
// away, as another user would.

const closed = 3;

export class ScriptedGateway {
  constructor({ userId = "alice" } = {}) {
    this.userId = userId;
    this.version = 0;
    this.messages = new Map(); // seq → Message
    this.requests = []; // every request the client made, without its id
    this.sockets = new Set();
    this.connects = 0;
    this.refuseConnections = false;
    const gateway = this;
    /** The WebSocket class to hand the client. */
    this.WebSocket = class {
      constructor(url) {
        this.url = url;
        this.readyState = 0;
        gateway.connects += 1;
        setTimeout(() => {
          if (gateway.refuseConnections) {
            this.readyState = closed;
            this.onerror?.({});
            this.onclose?.({ code: 1006, reason: "" });
            return;
          }
          this.readyState = 1;
          gateway.sockets.add(this);
          this.onopen?.({});
        }, 0);
      }

      send(text) {
        if (this.readyState !== 1) throw new Error("not open");
        const frame = JSON.parse(text);
        setTimeout(() => gateway.handle(this, frame), 0);
      }

      close(code = 1000, reason = "") {
        if (this.readyState === closed) return;
        this.readyState = closed;
        gateway.sockets.delete(this);
        setTimeout(() => this.onclose?.({ code, reason }), 0);
      }
    };
  }

  /** Seeds a stored message (its version from the counter) and returns it. */
  seed(text, { senderId = "bob", parentSeq = null } = {}) {
    return this.store({ senderId, text, parentSeq });
  }

  /** The channel as `channel.get` answers it. */
  get channel() {
    const visible = [...this.messages.values()];
    return { id: "c", type: "group", name: "", members: [this.userId, "bob"], version: this.version, lastMessage: visible.at(-1) ?? null };
  }

  /** The last request of `type`. */
  last(type) {
    return this.requests.filter((request) => request.type === type).at(-1);
  }

  /** Cuts every live connection without a close frame (1006). */
  drop() {
    for (const socket of [...this.sockets]) {
      socket.readyState = closed;
      this.sockets.delete(socket);
      setTimeout(() => socket.onclose?.({ code: 1006, reason: "" }), 0);
    }
  }

  /** Sends an event to every live connection. */
  event(name, data) {
    for (const socket of this.sockets) this.push(socket, { type: "event", event: name, data });
  }

  push(socket, frame) {
    if (socket.readyState === 1) socket.onmessage?.({ data: JSON.stringify(frame) });
  }

  // MARK: changes, as another user (or the client's own requests) make them

  store({ senderId, text, parentSeq = null, mentionedUserIds = [] }) {
    this.version += 1;
    const seq = this.messages.size + 1;
    const message = {
      id: `m${seq}`, channelId: "c", seq, senderId, text, data: null, clientMessageId: null, createdAt: 1000 + seq,
      parentSeq, replyCount: 0, mentionedUserIds, reactions: {}, ownReactions: [], editedAt: null, deletedAt: null, version: this.version,
    };
    this.messages.set(seq, message);
    this.event("message.new", message);
    if (parentSeq !== null) {
      const parent = this.messages.get(parentSeq);
      Object.assign(parent, { replyCount: parent.replyCount + 1, version: this.version });
      this.event("message.updated", { message: parent, change: "reply" });
    }
    return message;
  }

  edit(seq, text) {
    const message = this.messages.get(seq);
    this.version += 1;
    Object.assign(message, { text, editedAt: 5000 + this.version, version: this.version });
    this.event("message.updated", { message, change: "edit" });
    return message;
  }

  remove(seq) {
    const message = this.messages.get(seq);
    if (message.deletedAt) return message;
    this.version += 1;
    Object.assign(message, { text: "", data: null, mentionedUserIds: [], reactions: {}, ownReactions: [], deletedAt: 5000 + this.version, version: this.version });
    this.event("message.updated", { message, change: "delete" });
    return message;
  }

  react(seq, userId, kind, added) {
    const message = this.messages.get(seq);
    const own = message.ownReactions.includes(kind);
    if (userId === this.userId && own === added) return message; // a no-op that answers as usual
    this.version += 1;
    const count = (message.reactions[kind] ?? 0) + (added ? 1 : -1);
    const reactions = { ...message.reactions, [kind]: count };
    if (count <= 0) delete reactions[kind];
    const ownReactions = userId !== this.userId ? message.ownReactions
      : added ? [...message.ownReactions, kind] : message.ownReactions.filter((k) => k !== kind);
    Object.assign(message, { reactions, ownReactions, version: this.version });
    this.event(added ? "reaction.added" : "reaction.removed", { channelId: "c", seq, userId, kind, reactions });
    return message;
  }

  // MARK: requests

  handle(socket, { id, type, ...params }) {
    if (socket.readyState !== 1) return;
    if (type !== "auth") this.requests.push({ type, ...params });
    const ok = (result) => this.push(socket, { id, type: "ok", result: structuredClone(result) });
    const fail = (code) => this.push(socket, { id, type: "error", error: { code, message: code } });
    const message = this.messages.get(params.seq);
    switch (type) {
      case "auth":
      case "me":
        return ok({ user: { id: this.userId, name: this.userId }, blockedUserIds: [] });
      case "channel.get":
        return ok(this.channel);
      case "message.send":
        return ok(this.store({ senderId: this.userId, text: params.text, parentSeq: params.parentSeq ?? null,
          mentionedUserIds: params.mentionedUserIds ?? [] }));
      case "message.update":
        if (!message) return fail("ERR_MESSAGE_NOT_FOUND");
        if (message.deletedAt) return fail("ERR_MESSAGE_DELETED");
        return ok(this.edit(params.seq, params.text ?? message.text));
      case "message.delete":
        return message ? ok(this.remove(params.seq)) : fail("ERR_MESSAGE_NOT_FOUND");
      case "reaction.add":
      case "reaction.remove":
        if (!message) return fail("ERR_MESSAGE_NOT_FOUND");
        if (message.deletedAt) return fail("ERR_MESSAGE_DELETED");
        return ok(this.react(params.seq, this.userId, params.kind, type === "reaction.add"));
      case "message.history": {
        const all = [...this.messages.values()].filter((m) => (params.parentSeq === undefined || m.parentSeq === params.parentSeq)
          && (params.afterSeq === undefined || m.seq > params.afterSeq));
        return ok({ messages: all.slice(0, params.limit), next: all.length > params.limit ? "more" : null });
      }
      case "message.changes": {
        const changed = [...this.messages.values()].filter((m) => m.version > params.afterVersion)
          .sort((a, b) => a.version - b.version || a.seq - b.seq);
        const page = changed.slice(0, params.limit);
        return ok({ messages: page, version: this.version, next: changed.length > params.limit ? page.at(-1).version : null });
      }
      default:
        return fail("ERR_UNKNOWN_TYPE");
    }
  }
}
