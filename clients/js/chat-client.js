// chat-client.js: a dependency-free ES module client for the chat gateway's
// WebSocket protocol (PROTOCOL.md §1–§7, §14), for browsers and Node 20.
//
//   import { ChatClient } from "./chat-client.js";
//   const client = new ChatClient({ url: "ws://127.0.0.1:8080/v1/ws", token });
//   client.on("message.new", (message) => console.log(message.text));
//   await client.connect();
//   const { channels } = await client.request("channel.list", { limit: 50 });
//   await client.sendMessage(channels[0].id, "hi");
//
// What it does for the caller:
// - request/reply matching by `id` (`request` resolves with `result` or rejects
//   with a `ChatError` carrying the protocol's `code` and `retryAfterMs`);
// - events by name (`on("typing.start", fn)`, `on("*", fn)` for all of them);
// - reconnect with backoff after the connection drops, a fresh token from
//   `getToken` each time, and catch-up: for every channel it has seen a message
//   of, it pages `message.history` from `afterSeq` and emits what was missed as
//   `message.new` (second argument `{ catchUp: true }`), in `seq` order, with no
//   duplicate; `session.resync` (§7) triggers the same for its channels;
// - `sendMessage` tags each send with a `clientMessageId` and sends it again after
//   a reconnect, which the gateway answers with the stored message (§4).
//
// Node 20 has no global WebSocket: pass one, e.g. `{ WebSocket: (await import("ws")).WebSocket }`.

/** An `error` reply, or a failure of the connection itself (codes ERR_DISCONNECTED, ERR_TIMEOUT, ERR_NOT_CONNECTED, ERR_CONNECT_FAILED). */
export class ChatError extends Error {
  constructor(code, message, details = {}) {
    super(message || code);
    this.name = "ChatError";
    this.code = code;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.requestType !== undefined) this.requestType = details.requestType;
  }
}

/** The connection's states, as `state` events report them. */
export const ConnectionState = Object.freeze({
  idle: "idle",
  connecting: "connecting",
  open: "open",
  reconnecting: "reconnecting",
  closed: "closed",
});

/** Close codes after which reconnecting cannot help (§8), with what they mean. */
const finalCloseCodes = new Map([
  [1008, "the gateway refused this client (policy)"],
  [4002, "this user was deactivated"],
]);
const tokenExpiredCode = 4001;
const historyPageLimit = 100;

export class ChatClient {
  /**
   * @param {object} options
   * @param {string} options.url            the WebSocket endpoint, e.g. ws://127.0.0.1:8080/v1/ws
   * @param {string} [options.token]        a JWT (§1); or:
   * @param {() => Promise<string>|string} [options.getToken]  asked before every connect (fresh tokens after expiry)
   * @param {string} [options.device]       the `device` label (§1)
   * @param {boolean} [options.hideBlocked] ask for `hideBlocked=1` (§5)
   * @param {Function} [options.WebSocket]  the WebSocket class (default: globalThis.WebSocket)
   * @param {boolean} [options.reconnect=true]
   * @param {number} [options.requestTimeoutMs=15000]
   * @param {number} [options.minReconnectDelayMs=500]
   * @param {number} [options.maxReconnectDelayMs=15000]
   * @param {number} [options.keepAliveMs=30000]  after this long with nothing received, a `me` request checks the connection (0: off)
   */
  constructor(options) {
    if (!options || !options.url) throw new TypeError("ChatClient needs options.url");
    if (!options.token && !options.getToken) throw new TypeError("ChatClient needs options.token or options.getToken");
    this.options = {
      reconnect: true,
      requestTimeoutMs: 15000,
      minReconnectDelayMs: 500,
      maxReconnectDelayMs: 15000,
      keepAliveMs: 30000,
      ...options,
    };
    this.WebSocket = options.WebSocket || globalThis.WebSocket;
    if (!this.WebSocket) throw new TypeError("no WebSocket class: pass options.WebSocket (Node 20: the ws package)");
    this.state = ConnectionState.idle;
    this.socket = null;
    this.nextRequestId = 1;
    this.pending = new Map(); // id → { resolve, reject, timer, type, params }
    this.waitingForOpen = []; // requests made while (re)connecting
    this.listeners = new Map(); // name → Set<fn>
    this.lastSeq = new Map(); // channelId → highest seq seen
    this.catchingUp = new Map(); // channelId → live message.new held back while its catch-up runs
    this.attempt = 0;
    this.reconnectTimer = null;
    this.keepAliveTimer = null;
    this.everOpened = false;
  }

  // MARK: Events

  /** Calls `listener(data, meta)` for each `name` event; returns a function that stops it. */
  on(name, listener) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(listener);
    return () => this.off(name, listener);
  }

  off(name, listener) {
    this.listeners.get(name)?.delete(listener);
  }

  emit(name, data, meta) {
    for (const listener of [...(this.listeners.get(name) || [])]) {
      try {
        listener(data, meta);
      } catch (error) {
        console.error(`chat-client: a "${name}" listener threw`, error);
      }
    }
  }

  setState(state, details = {}) {
    const previous = this.state;
    this.state = state;
    this.emit("state", { state, previous, ...details });
  }

  // MARK: Connection

  /** Opens the connection; resolves once it is open, rejects if the first attempt fails (bad token, gateway down). */
  connect() {
    if (this.state === ConnectionState.open) return Promise.resolve();
    this.userClosed = false;
    return new Promise((resolve, reject) => {
      this.firstOpen = { resolve, reject };
      this.open();
    });
  }

  /** Closes for good: no reconnect; pending requests fail with ERR_NOT_CONNECTED. */
  close() {
    this.userClosed = true;
    clearTimeout(this.reconnectTimer);
    this.stopKeepAlive();
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      this.detach(socket);
      try {
        socket.close(1000, "client closed");
      } catch {}
    }
    this.failPending("ERR_NOT_CONNECTED", "the client was closed");
    this.setState(ConnectionState.closed, { reason: "closed by the client" });
  }

  /** Skips the wait before the next reconnect attempt (e.g. when the browser says it is online again). */
  reconnectNow() {
    if (this.state !== ConnectionState.reconnecting) return;
    clearTimeout(this.reconnectTimer);
    this.open();
  }

  async open() {
    const reconnecting = this.everOpened;
    this.setState(reconnecting ? ConnectionState.reconnecting : ConnectionState.connecting, { attempt: this.attempt });
    let token;
    try {
      token = this.options.getToken ? await this.options.getToken() : this.options.token;
    } catch (error) {
      this.lost(null, `could not get a token: ${error.message || error}`);
      return;
    }
    if (this.userClosed) return;
    const url = new URL(this.options.url);
    url.searchParams.set("token", token);
    if (this.options.device) url.searchParams.set("device", this.options.device);
    if (this.options.hideBlocked) url.searchParams.set("hideBlocked", "1");
    let socket;
    try {
      socket = new this.WebSocket(url.toString());
    } catch (error) {
      this.lost(null, `cannot open ${this.options.url}: ${error.message || error}`);
      return;
    }
    this.socket = socket;
    socket.onopen = () => this.opened(socket);
    socket.onmessage = (event) => this.received(socket, event.data);
    socket.onclose = (event) => {
      if (socket !== this.socket) return;
      this.socket = null;
      this.lost(event.code, event.reason);
    };
    socket.onerror = () => {}; // the close event follows and says what happened
  }

  detach(socket) {
    socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
  }

  opened(socket) {
    if (socket !== this.socket) return;
    const reconnected = this.everOpened;
    this.everOpened = true;
    this.attempt = 0;
    this.lastReceivedAt = Date.now();
    this.startKeepAlive();
    this.setState(ConnectionState.open, { reconnected });
    const waiting = this.waitingForOpen;
    this.waitingForOpen = [];
    for (const request of waiting) this.transmit(request);
    this.emit("open", { reconnected });
    if (this.firstOpen) {
      this.firstOpen.resolve();
      this.firstOpen = null;
    }
    if (reconnected) this.catchUp([...this.lastSeq.keys()]);
  }

  /** The socket closed (code null: it never opened or could not be made). */
  lost(code, reason) {
    this.stopKeepAlive();
    this.failPending("ERR_DISCONNECTED", "the connection closed before the reply");
    if (this.userClosed) return;
    const final = finalCloseCodes.get(code);
    const expired = code === tokenExpiredCode;
    const describe = final || (expired ? "the token expired"
      : code === 1001 ? "the gateway is restarting" : reason || (code ? `closed (${code})` : "the gateway cannot be reached"));
    if (this.firstOpen) {
      // Never opened: a browser cannot tell a refused token (401) from an unreachable gateway.
      this.firstOpen.reject(new ChatError("ERR_CONNECT_FAILED",
        "could not connect: the gateway refused the token or cannot be reached"));
      this.firstOpen = null;
      this.failWaiting("ERR_CONNECT_FAILED", "could not connect");
      this.setState(ConnectionState.closed, { closeCode: code, reason: describe });
      return;
    }
    if (!this.options.reconnect || final || (expired && !this.options.getToken)) {
      this.failWaiting("ERR_NOT_CONNECTED", describe);
      this.setState(ConnectionState.closed, { closeCode: code, reason: describe, final: true });
      return;
    }
    this.attempt += 1;
    const ceiling = Math.min(this.options.maxReconnectDelayMs,
      this.options.minReconnectDelayMs * 2 ** Math.min(this.attempt - 1, 16));
    // Expiry with a token source reconnects at once; otherwise full jitter spreads a crowd of clients out.
    const delay = expired ? 0 : Math.round(ceiling / 2 + Math.random() * ceiling / 2);
    this.setState(ConnectionState.reconnecting, { closeCode: code, reason: describe, attempt: this.attempt, retryInMs: delay });
    this.reconnectTimer = setTimeout(() => this.open(), delay);
  }

  startKeepAlive() {
    this.stopKeepAlive();
    const period = this.options.keepAliveMs;
    if (!period) return;
    this.keepAliveTimer = setInterval(() => {
      if (this.state !== ConnectionState.open || Date.now() - this.lastReceivedAt < period) return;
      this.request("me").catch((error) => {
        // No answer in time: the connection is dead without having closed; start over.
        if (error.code === "ERR_TIMEOUT" && this.socket) {
          const socket = this.socket;
          this.socket = null;
          this.detach(socket);
          try {
            socket.close(4000, "keep-alive timeout");
          } catch {}
          this.lost(null, "no answer from the gateway");
        }
      });
    }, Math.max(1000, period / 3));
  }

  stopKeepAlive() {
    clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }

  // MARK: Requests

  /** Sends request `type` with `params`; resolves with its `result`, rejects with a ChatError. */
  request(type, params = {}, { timeoutMs } = {}) {
    if (this.state === ConnectionState.closed || this.state === ConnectionState.idle) {
      return Promise.reject(new ChatError("ERR_NOT_CONNECTED", "not connected", { requestType: type }));
    }
    return new Promise((resolve, reject) => {
      const request = { id: this.nextRequestId++, type, params, resolve, reject, timeoutMs: timeoutMs ?? this.options.requestTimeoutMs };
      if (this.state === ConnectionState.open && this.socket) this.transmit(request);
      else this.waitingForOpen.push(request);
    });
  }

  transmit(request) {
    const { id, type, params } = request;
    request.timer = setTimeout(() => {
      this.pending.delete(id);
      request.reject(new ChatError("ERR_TIMEOUT", `no reply to ${type} within ${request.timeoutMs} ms`, { requestType: type }));
    }, request.timeoutMs);
    this.pending.set(id, request);
    try {
      this.socket.send(JSON.stringify({ ...params, id, type }));
    } catch (error) {
      clearTimeout(request.timer);
      this.pending.delete(id);
      request.reject(new ChatError("ERR_DISCONNECTED", `cannot send: ${error.message || error}`, { requestType: type }));
    }
  }

  failPending(code, message) {
    for (const request of this.pending.values()) {
      clearTimeout(request.timer);
      request.reject(new ChatError(code, message, { requestType: request.type }));
    }
    this.pending.clear();
  }

  failWaiting(code, message) {
    const waiting = this.waitingForOpen;
    this.waitingForOpen = [];
    for (const request of waiting) request.reject(new ChatError(code, message, { requestType: request.type }));
  }

  received(socket, data) {
    if (socket !== this.socket) return;
    this.lastReceivedAt = Date.now();
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      this.emit("protocol.error", { reason: "a frame that is not JSON", frame: String(data).slice(0, 200) });
      return;
    }
    if (frame.type === "event") {
      this.event(frame.event, frame.data);
      return;
    }
    const request = this.pending.get(frame.id);
    if (!request) {
      if (frame.type === "error") this.emit("protocol.error", { reason: "an error reply to no request", error: frame.error });
      return;
    }
    this.pending.delete(frame.id);
    clearTimeout(request.timer);
    if (frame.type === "ok") {
      this.noteResult(request, frame.result);
      request.resolve(frame.result);
    } else {
      const error = frame.error || {};
      request.reject(new ChatError(error.code || "ERR_INTERNAL", error.message, { retryAfterMs: error.retryAfterMs, requestType: request.type }));
    }
  }

  // MARK: Messages and catch-up

  /**
   * Sends a message; resolves with the stored Message. A send cut off by a dropped
   * connection is sent again, with the same `clientMessageId`, once it is back.
   */
  async sendMessage(channelId, text, { data, clientMessageId = newClientMessageId(), retryWindowMs = 60000 } = {}) {
    const params = { channelId, text, clientMessageId };
    if (data !== undefined) params.data = data;
    const giveUpAt = Date.now() + retryWindowMs;
    for (;;) {
      try {
        return await this.request("message.send", params);
      } catch (error) {
        const retriable = error.code === "ERR_DISCONNECTED" || error.code === "ERR_TIMEOUT" || error.code === "ERR_INTERNAL";
        if (!retriable || Date.now() > giveUpAt || this.state === ConnectionState.closed) throw error;
        await this.whenOpen(giveUpAt - Date.now());
      }
    }
  }

  /** Resolves when the connection is open (at once if it is), rejects after `timeoutMs`. */
  whenOpen(timeoutMs) {
    if (this.state === ConnectionState.open) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const stop = this.on("state", ({ state }) => {
        if (state === ConnectionState.open) {
          stop();
          clearTimeout(timer);
          resolve();
        } else if (state === ConnectionState.closed) {
          stop();
          clearTimeout(timer);
          reject(new ChatError("ERR_NOT_CONNECTED", "the connection closed"));
        }
      });
      const timer = setTimeout(() => {
        stop();
        reject(new ChatError("ERR_TIMEOUT", "not reconnected in time"));
      }, Math.max(0, timeoutMs));
    });
  }

  /** From now on, catch `channelId` up after reconnects from `seq` (kept if a later one is known). */
  follow(channelId, seq = 0) {
    if ((this.lastSeq.get(channelId) ?? -1) < seq) this.lastSeq.set(channelId, seq);
  }

  /** Stops catching `channelId` up (left the channel). */
  unfollow(channelId) {
    this.lastSeq.delete(channelId);
  }

  noteResult(request, result) {
    if (request.type === "message.send" && result && result.channelId) {
      this.follow(result.channelId, result.seq);
    } else if (request.type === "message.history" && result && Array.isArray(result.messages)) {
      const channelId = request.params.channelId;
      if (this.catchingUp.has(channelId)) return; // catchUp delivers these pages itself
      const newest = result.messages.reduce((max, message) => Math.max(max, message.seq), 0);
      // A page before some seq says nothing about newer messages.
      if (request.params.beforeSeq === undefined || this.lastSeq.has(channelId)) this.follow(channelId, newest);
    }
  }

  event(name, data) {
    if (name === "message.new" && data) {
      const held = this.catchingUp.get(data.channelId);
      if (held) {
        held.push(data);
        return;
      }
      if (this.lastSeq.has(data.channelId) && data.seq <= this.lastSeq.get(data.channelId)) return; // seen
      this.follow(data.channelId, data.seq);
    }
    if (name === "session.resync" && data && Array.isArray(data.channelIds)) {
      for (const channelId of data.channelIds) if (!this.lastSeq.has(channelId)) this.follow(channelId, 0);
      this.catchUp(data.channelIds);
    }
    this.emit(name, data);
    this.emit("*", { event: name, data });
  }

  /** Pages each channel forward from the last seq seen and emits what is new. */
  async catchUp(channelIds) {
    const started = channelIds.filter((id) => this.lastSeq.has(id) && !this.catchingUp.has(id));
    for (const id of started) this.catchingUp.set(id, []);
    await Promise.all(started.map(async (channelId) => {
      try {
        let params = { channelId, afterSeq: this.lastSeq.get(channelId), limit: historyPageLimit };
        for (;;) {
          const page = await this.request("message.history", params);
          for (const message of page.messages || []) this.deliverCaughtUp(channelId, message);
          if (!page.next) break;
          params = { channelId, cursor: page.next, limit: historyPageLimit };
        }
      } catch (error) {
        if (error.code === "ERR_CHANNEL_NOT_FOUND" || error.code === "ERR_NOT_A_MEMBER") this.unfollow(channelId);
        else this.emit("catchUp.error", { channelId, error });
      } finally {
        const held = this.catchingUp.get(channelId) || [];
        this.catchingUp.delete(channelId);
        for (const message of held.sort((a, b) => a.seq - b.seq)) this.deliverCaughtUp(channelId, message, false);
      }
    }));
    if (started.length) this.emit("caughtUp", { channelIds: started });
  }

  deliverCaughtUp(channelId, message, catchUp = true) {
    if (!this.lastSeq.has(channelId) || message.seq <= this.lastSeq.get(channelId)) return;
    this.lastSeq.set(channelId, message.seq);
    this.emit("message.new", message, { catchUp });
    this.emit("*", { event: "message.new", data: message, catchUp });
  }
}

/** The WebSocket endpoint of the gateway that served `location` (a page's `window.location`). */
export function endpointFor(location, path = "/v1/ws") {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}

/** A fresh `clientMessageId`. */
export function newClientMessageId() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  return `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
}

/** The claims of a JWT, read without checking it (only the gateway can): `sub`, `exp`, … ; null if it is not one. */
export function readTokenClaims(token) {
  const parts = String(token).trim().split(".");
  if (parts.length !== 3) return null;
  try {
    const base64 = parts[1].replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(parts[1].length / 4) * 4, "=");
    const binary = atob(base64);
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}
