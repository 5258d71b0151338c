// chat-client.js: the JavaScript SDK of the chat gateway (docs/clients.md), one
// dependency-free ES module for browsers and Node 20. It speaks the WebSocket
// protocol (PROTOCOL.md §1–§7, §14) with the same shape and rules as the Swift
// ChatClient (Sources/ChatClient):
//
//   import { ChatClient } from "./chat-client.js";
//   const client = new ChatClient({ url: "ws://127.0.0.1:8080/v1/ws", token: () => fetchTokenFromMyBackend() });
//   await client.connect();
//   const { channels } = await client.channels({ limit: 20 });
//   for await (const message of client.messages(channels[0].id)) console.log(message.text);
//
// - Every request of §4 and §14 is a method returning a promise of the reply's
//   `result`; a refused request rejects with a `ChatError` carrying the gateway's
//   `code` (and `retryAfterMs` for ERR_RATE_LIMITED).
// - Events: `on(name, fn)` for one event, `on("*", fn)` for all of them,
//   `onChannel(channelId, fn)` for the events about one channel; `on("state", fn)`
//   for the connection's own changes.
// - The token never goes into the URL: the client connects to `?auth=message` and
//   sends `{"type":"auth","token"}` as its first message (PROTOCOL.md §1, v1.2), so
//   a refused token comes back as a close code the browser can read: 4004 (refused)
//   or 4001 (expired) asks the token provider once more, and a fresh token refused
//   too ends the client; 4002 (deactivated) and 4003 (banned) end it at once; 4005
//   (too many connections) is retried with backoff.
// - Reconnects with exponential backoff and jitter; the token provider is asked
//   again after `session.expiring`, a 4001 close, or a refused token.
// - `messages(channelId, { afterSeq })` yields every message of the channel the
//   user can see exactly once, in `seq` order, across reconnects (ChannelFeed).
// - Requests in flight when the connection drops are sent again once it is back
//   (a `message.send` with the same `clientMessageId`, so it is stored once and
//   resolves once); a non-distinct `channel.create` fails with ERR_DISCONNECTED.
//
// Node 20 has a global WebSocket only with `--experimental-websocket`; otherwise
// pass a WebSocket class with the browser's API as `options.WebSocket`.

// MARK: Errors

/**
 * A refused request (`code` is the gateway's, PROTOCOL.md §11) or a failure of the
 * connection itself: ERR_DISCONNECTED (the connection dropped before the answer, for a
 * request that is not safe to repeat), ERR_TIMEOUT (no answer within `requestTimeoutMs`),
 * ERR_NOT_CONNECTED (the client is closed), ERR_CONNECT_FAILED (`connect()` could not reach
 * the gateway). A refused `auth` rejects `connect()` with the §11 code the gateway named in
 * its close reason (ERR_NOT_LOGGED_IN, ERR_TOKEN_EXPIRED, ERR_FORBIDDEN) and `closeCode`
 * (4004, 4001, 4002, 4003, 4005).
 */
export class ChatError extends Error {
  constructor(code, message, details = {}) {
    super(message || code);
    this.name = "ChatError";
    this.code = code;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.requestType !== undefined) this.requestType = details.requestType;
    if (details.closeCode !== undefined) this.closeCode = details.closeCode;
  }
}

/** The connection's states, as `state` events report them. */
export const ConnectionState = Object.freeze({
  idle: "idle", // created, connect() not called yet
  connecting: "connecting",
  open: "open",
  reconnecting: "reconnecting",
  closed: "closed", // close(), a failed connect(), or the gateway ended the user (4002)
});

const tokenExpiredCloseCode = 4001;
const deactivatedCloseCode = 4002;
const bannedCloseCode = 4003;
const unauthorizedCloseCode = 4004;
const tooManyConnectionsCloseCode = 4005;

/** A refused or expired token: worth one fresh token from the provider. */
const isTokenRefusal = (code) => code === unauthorizedCloseCode || code === tokenExpiredCloseCode;
/** The gateway will refuse this user whatever the token: nothing is retried. */
const isUserRefusal = (code) => code === deactivatedCloseCode || code === bannedCloseCode;

/** The §11 code a refusal's close reason starts with ("ERR_NOT_LOGGED_IN: …"), else one for its close code. */
function refusalCode(closeCode, reason) {
  const named = /^(ERR_[A-Z_]+)/.exec(reason || "");
  if (named) return named[1];
  if (closeCode === unauthorizedCloseCode) return "ERR_NOT_LOGGED_IN";
  if (closeCode === tokenExpiredCloseCode) return "ERR_TOKEN_EXPIRED";
  if (isUserRefusal(closeCode) || closeCode === tooManyConnectionsCloseCode) return "ERR_FORBIDDEN";
  return "ERR_CONNECT_FAILED";
}

// MARK: Reconnect backoff

/**
 * The delay before reconnect attempt `attempt` (from 1): exponential from `baseMs` up to
 * `maxMs`, with jitter (a draw `unit` in 0…1 picks between half of that and all of it), so
 * a gateway restart does not see every client come back in the same instant.
 */
export function reconnectDelay(attempt, unit = Math.random(), { baseMs = 250, maxMs = 30000 } = {}) {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(baseMs * 2 ** exponent, maxMs);
  return ceiling * (0.5 + 0.5 * Math.min(Math.max(unit, 0), 1));
}

// MARK: Channel feed (sans-IO)

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

// MARK: Message stream

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

// MARK: Blocked users query

/**
 * Pages through the users blocked by (or blocking) the current user, the way CometChat's
 * `BlockedUsersRequest` and Sendbird's blocked-user list query do: set the filters once,
 * call `next()` until it resolves with null. `hasNext` is false once the last page came.
 */
export class BlockedUsersQuery {
  constructor(client, { direction = "byMe", limit = 20, search, userIds } = {}) {
    this.client = client;
    this.direction = direction;
    this.limit = limit;
    this.search = search;
    this.userIds = userIds;
    this.cursor = null;
    this.hasNext = true;
  }

  /** The next page of Users; null once the last page was returned. */
  async next() {
    if (!this.hasNext) return null;
    const params = { direction: this.direction, limit: this.limit };
    if (this.search !== undefined) params.search = this.search;
    if (this.userIds !== undefined) params.userIds = this.userIds;
    if (this.cursor) params.cursor = this.cursor;
    const page = await this.client.request("user.blocked.list", params);
    this.cursor = page.next ?? null;
    this.hasNext = this.cursor !== null;
    return page.users;
  }
}

// MARK: Client

/** The channel an event is about, if any. */
function channelOf(name, data) {
  if (!data) return null;
  if (name === "channel.updated") return data.id ?? null;
  return data.channelId ?? null;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class ChatClient {
  /**
   * @param {object} options
   * @param {string} options.url  the WebSocket endpoint, e.g. wss://chat.example.com/v1/ws
   * @param {string|(() => string|Promise<string>)} options.token  a JWT, or a function returning one: called
   *   before the first connect and again after `session.expiring`, a 4001 close, or a refused token
   * @param {Function} [options.WebSocket]  a WebSocket class with the browser's API (default: globalThis.WebSocket)
   * @param {string} [options.device]  the connection's `device` label (§1)
   * @param {boolean} [options.hideBlocked]  `hideBlocked=1` (§5)
   * @param {boolean} [options.retryRateLimited=false]  a send refused with ERR_RATE_LIMITED waits `retryAfterMs` and goes again
   * @param {number} [options.requestTimeoutMs=30000]  how long a request waits for its answer, reconnects included
   * @param {number} [options.connectTimeoutMs=15000]  how long one connection attempt may take to open and authenticate
   * @param {{baseMs: number, maxMs: number}} [options.backoff]  reconnect delays (default 250 ms doubling to 30 s)
   * @param {number} [options.historyPageSize=100]  messages per history page when catching up
   * @param {number} [options.keepAliveMs=30000]  after this long with nothing received, a `me` request checks the connection (0: off)
   */
  constructor(options) {
    if (!options || !options.url) throw new TypeError("ChatClient needs options.url");
    const token = options.token ?? options.getToken; // getToken: the first version's name
    if (!token) throw new TypeError("ChatClient needs options.token (a JWT or a function returning one)");
    this.options = {
      retryRateLimited: false,
      requestTimeoutMs: 30000,
      connectTimeoutMs: 15000,
      historyPageSize: 100,
      keepAliveMs: 30000,
      ...options,
      backoff: { baseMs: 250, maxMs: 30000, ...options.backoff },
    };
    this.tokenProvider = typeof token === "function" ? token : () => token;
    this.canRefreshToken = typeof token === "function";
    this.WebSocket = options.WebSocket || globalThis.WebSocket;
    if (!this.WebSocket) {
      throw new TypeError("no WebSocket class: pass options.WebSocket (Node 20: run with --experimental-websocket)");
    }
    this.state = ConnectionState.idle;
    this.socket = null;
    this.token = null;
    this.tokenStale = true; // ask the provider before the next connect
    this.attempt = 0; // reconnect attempts since the connection was lost
    this.tokensRefused = 0; // refused tokens in a row (a fresh one refused too ends the client)
    this.reconnectTimer = null;
    this.keepAliveTimer = null;
    this.everOpened = false;
    this.opening = null; // connect()'s promise while the first connection opens
    this.lastRequestId = 0;
    this.pending = new Map(); // id → { text, type, retriable, resolve, reject, timer }
    this.listeners = new Map(); // event name, "*" or "state" → Set<fn>
    this.channelListeners = new Map(); // channelId → Set<fn>
    this.feeds = new Map(); // channelId → { feed, streams: Set<MessageStream>, read: object|null }
    this.presenceFollowed = new Set();
  }

  // MARK: Events

  /**
   * Calls `listener(data)` for each `name` event (PROTOCOL.md §7); `"*"` gets every event
   * as `{ event, data }`; `"state"` gets the connection's changes as `{ state, previous,
   * reason?, closeCode?, attempt?, retryInMs?, reconnected? }`. Returns a function that stops it.
   */
  on(name, listener) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(listener);
    return () => this.off(name, listener);
  }

  off(name, listener) {
    this.listeners.get(name)?.delete(listener);
  }

  /** Calls `listener({ event, data })` for each event about `channelId` (messages, updates, typing, read marks). */
  onChannel(channelId, listener) {
    if (!this.channelListeners.has(channelId)) this.channelListeners.set(channelId, new Set());
    this.channelListeners.get(channelId).add(listener);
    return () => this.channelListeners.get(channelId)?.delete(listener);
  }

  emit(name, data) {
    for (const listener of [...(this.listeners.get(name) || [])]) {
      try {
        listener(data);
      } catch (error) {
        console.error(`chat-client: a "${name}" listener threw`, error);
      }
    }
  }

  publish(name, data) {
    this.emit(name, data);
    this.emit("*", { event: name, data });
    const channelId = channelOf(name, data);
    for (const listener of [...(this.channelListeners.get(channelId) || [])]) {
      try {
        listener({ event: name, data });
      } catch (error) {
        console.error("chat-client: a channel listener threw", error);
      }
    }
  }

  setState(state, details = {}) {
    const previous = this.state;
    this.state = state;
    this.emit("state", { state, previous, ...details });
  }

  // MARK: Connection

  /**
   * Connects; rejects with ERR_CONNECT_FAILED when the gateway cannot be reached, and with
   * the refusal's §11 code and `closeCode` when it refuses the user (a refused token, with a
   * token function, after a second try with a fresh one). Once connected, the client
   * reconnects by itself until `close()` or a refusal that no retry can change.
   */
  connect() {
    if (this.state === ConnectionState.open) return Promise.resolve();
    if (this.opening) return this.opening;
    if (this.everOpened && this.state !== ConnectionState.closed) return this.whenOpen(this.options.requestTimeoutMs);
    this.userClosed = false;
    this.everOpened = false;
    this.setState(ConnectionState.connecting);
    this.opening = (async () => {
      // A refused token is asked for again once (a token function may have handed out one
      // that expired meanwhile); any other failure is the answer.
      const tries = this.canRefreshToken ? 2 : 1;
      let failure;
      for (let tried = 0; tried < tries; tried += 1) {
        failure = await this.open();
        if (this.userClosed) throw new ChatError("ERR_NOT_CONNECTED", "closed by the client while connecting");
        if (!failure) return;
        if (!isTokenRefusal(failure.closeCode)) break;
        this.tokenStale = true;
      }
      this.end(failure.reason, failure.closeCode ? { closeCode: failure.closeCode, final: true } : {});
      throw new ChatError(failure.code, `could not connect: ${failure.reason}`, { closeCode: failure.closeCode });
    })().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  /** Closes for good: no reconnect; waiting requests fail with ERR_NOT_CONNECTED; message streams end. */
  close() {
    if (this.state === ConnectionState.closed && !this.socket) return;
    this.end("closed by the client");
  }

  /** `close()`, under the Swift SDK's name. */
  disconnect() {
    this.close();
  }

  end(reason, details = {}) {
    this.userClosed = true;
    clearTimeout(this.reconnectTimer);
    this.stopKeepAlive();
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      detach(socket);
      try {
        socket.close(1000, "client closed");
      } catch {}
    }
    for (const request of this.pending.values()) {
      clearTimeout(request.timer);
      request.reject(new ChatError("ERR_NOT_CONNECTED", `the client closed: ${reason}`, { requestType: request.type }));
    }
    this.pending.clear();
    for (const entry of this.feeds.values()) for (const stream of entry.streams) stream.finish();
    this.feeds.clear();
    this.setState(ConnectionState.closed, { reason, ...details });
  }

  /** Skips the wait before the next reconnect attempt (e.g. when the browser says it is online again). */
  reconnectNow() {
    if (this.state !== ConnectionState.reconnecting || !this.reconnectTimer) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.reconnectAttempt();
  }

  /** Resolves when the connection is open (at once if it is); rejects after `timeoutMs` or when the client closes. */
  whenOpen(timeoutMs = this.options.requestTimeoutMs) {
    if (this.state === ConnectionState.open) return Promise.resolve();
    if (this.state === ConnectionState.closed) return Promise.reject(new ChatError("ERR_NOT_CONNECTED", "the client is closed"));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new ChatError("ERR_TIMEOUT", `not connected within ${timeoutMs} ms`));
      }, timeoutMs);
      const stop = this.on("state", ({ state }) => {
        if (state !== ConnectionState.open && state !== ConnectionState.closed) return;
        stop();
        clearTimeout(timer);
        if (state === ConnectionState.open) resolve();
        else reject(new ChatError("ERR_NOT_CONNECTED", "the client closed"));
      });
    });
  }

  /**
   * One connection attempt: the upgrade to `?auth=message`, then the token as the first
   * message. Resolves with null once `auth` was answered (the socket is wired up), or with
   * `{ reason, code, closeCode }` when it failed before: `closeCode` is the gateway's close
   * code (4004, 4001, 4002, 4003, 4005 for a refusal), `code` the §11 code it named.
   */
  async open() {
    if (this.tokenStale || this.token === null) {
      try {
        this.token = await this.tokenProvider();
        this.tokenStale = false;
      } catch (error) {
        return { reason: `the token provider failed: ${error?.message || error}`, code: "ERR_CONNECT_FAILED" };
      }
    }
    if (this.userClosed) return { reason: "closed by the client", code: "ERR_NOT_CONNECTED" };
    const url = new URL(this.options.url);
    url.searchParams.delete("token");
    url.searchParams.set("auth", "message");
    if (this.options.device) url.searchParams.set("device", this.options.device);
    if (this.options.hideBlocked) url.searchParams.set("hideBlocked", "1");
    let socket;
    try {
      socket = new this.WebSocket(url.toString());
    } catch (error) {
      return { reason: `cannot open ${this.options.url}: ${error?.message || error}`, code: "ERR_CONNECT_FAILED" };
    }
    const token = this.token;
    return new Promise((resolve) => {
      let authId = null;
      const failed = (reason, closeCode = null) => {
        clearTimeout(timer);
        detach(socket);
        try {
          socket.close();
        } catch {}
        resolve({ reason, closeCode, code: closeCode ? refusalCode(closeCode, reason) : "ERR_CONNECT_FAILED" });
      };
      const timer = setTimeout(() => failed(`not open within ${this.options.connectTimeoutMs} ms`),
        this.options.connectTimeoutMs);
      socket.onopen = () => {
        if (this.userClosed) {
          failed("closed by the client");
          return;
        }
        authId = ++this.lastRequestId;
        try {
          socket.send(JSON.stringify({ id: authId, type: "auth", token }));
        } catch {
          failed("the connection closed before auth");
        }
      };
      // The gateway sends nothing before the `auth` reply, which carries `me`'s result.
      socket.onmessage = (event) => {
        let frame;
        try {
          frame = JSON.parse(event.data);
        } catch {
          return;
        }
        if (authId === null || frame.id !== authId) return;
        if (frame.type !== "ok") {
          const error = frame.error || {};
          failed(`auth refused: ${error.code}: ${error.message}`);
          return;
        }
        clearTimeout(timer);
        if (this.userClosed) {
          failed("closed by the client");
          return;
        }
        this.opened(socket, frame.result);
        resolve(null);
      };
      // A socket that could not open reports an error (Node 20's WebSocket reports nothing
      // else); one the gateway closed (a refused token) reports its close code and reason.
      socket.onerror = () => {
        if (authId === null) failed("the gateway cannot be reached");
      };
      socket.onclose = (event) => {
        const refused = event.code >= 4000 && event.code < 5000;
        failed(event.reason || (refused ? `refused (${event.code})` : "the gateway cannot be reached"),
          refused ? event.code : null);
      };
    });
  }

  /** The socket is open and authenticated; `me` is the `auth` reply (`me`'s result). */
  opened(socket, me) {
    const reconnected = this.everOpened;
    this.everOpened = true;
    this.attempt = 0;
    this.tokensRefused = 0;
    this.socket = socket;
    socket.onmessage = (event) => this.received(socket, event.data);
    socket.onclose = (event) => this.lost(socket, event.code, event.reason);
    socket.onerror = () => {}; // a close event follows
    this.lastReceivedAt = Date.now();
    this.startKeepAlive();
    this.setState(ConnectionState.open, { reconnected });
    // Requests that waited (or were cut off) go out again, oldest first.
    for (const id of [...this.pending.keys()].sort((a, b) => a - b)) {
      const request = this.pending.get(id);
      if (request) this.transmit(request);
    }
    if (this.presenceFollowed.size) {
      const users = [...this.presenceFollowed];
      for (let start = 0; start < users.length; start += 100) {
        this.request("presence.subscribe", { userIds: users.slice(start, start + 100) }).catch(() => {});
      }
    }
    for (const channelId of this.feeds.keys()) this.catchUp(channelId);
    this.emit("open", { reconnected, me });
  }

  /** The open socket closed (or the keep-alive gave up on it). */
  lost(socket, code, reason) {
    if (socket !== this.socket) return;
    detach(socket);
    this.socket = null;
    this.stopKeepAlive();
    if (this.userClosed) return;
    if (isUserRefusal(code)) {
      this.end(code === deactivatedCloseCode ? "this user was deactivated" : "this user was banned", { closeCode: code, final: true });
      return;
    }
    if (code === tokenExpiredCloseCode) this.tokenStale = true;
    for (const [id, request] of this.pending) {
      if (request.retriable) continue;
      this.pending.delete(id);
      clearTimeout(request.timer);
      request.reject(new ChatError("ERR_DISCONNECTED", "the connection was lost before the answer", { requestType: request.type }));
    }
    for (const entry of this.feeds.values()) {
      entry.read = null;
      entry.feed.historyFailed();
    }
    const describe = code === tokenExpiredCloseCode ? "the token expired"
      : code === 1001 ? "the gateway is restarting"
        : reason || (code && code !== 1006 ? `closed (${code})` : "the connection dropped");
    this.scheduleReconnect({ closeCode: code, reason: describe });
  }

  scheduleReconnect(details) {
    this.attempt += 1;
    const delay = Math.round(reconnectDelay(this.attempt, Math.random(), this.options.backoff));
    this.setState(ConnectionState.reconnecting, { ...details, attempt: this.attempt, retryInMs: delay });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.reconnectAttempt();
    }, delay);
  }

  async reconnectAttempt() {
    if (this.userClosed) return;
    const failure = await this.open();
    if (!failure || this.userClosed) return;
    const { closeCode, reason } = failure;
    if (isUserRefusal(closeCode)) {
      this.end(reason, { closeCode, final: true });
      return;
    }
    if (isTokenRefusal(closeCode)) {
      // One fresh token at once; a fresh one refused too will not change by waiting.
      this.tokensRefused += 1;
      if (!this.canRefreshToken || this.tokensRefused >= 2) {
        this.end(reason, { closeCode, final: true });
        return;
      }
      this.tokenStale = true;
      this.reconnectAttempt();
      return;
    }
    this.scheduleReconnect({ reason, closeCode });
  }

  startKeepAlive() {
    this.stopKeepAlive();
    const period = this.options.keepAliveMs;
    if (!period) return;
    this.keepAliveTimer = setInterval(() => {
      if (this.state !== ConnectionState.open || Date.now() - this.lastReceivedAt < period) return;
      const socket = this.socket;
      this.request("me", {}, { retriable: false, timeoutMs: Math.max(5000, period / 3) }).catch((error) => {
        // No answer in time: the connection is dead without having closed; start over.
        if (error.code !== "ERR_TIMEOUT" || socket !== this.socket) return;
        try {
          socket.close(4000, "keep-alive timeout");
        } catch {}
        this.lost(socket, null, "no answer from the gateway");
      });
    }, Math.max(1000, period / 3));
  }

  stopKeepAlive() {
    clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }

  // MARK: Requests

  /**
   * Sends request `type` with `params`; resolves with its `result`, rejects with a ChatError.
   * A request made while reconnecting waits for the connection; one cut off by a dropped
   * connection is sent again once it is back, unless `retriable: false`.
   */
  request(type, params = {}, { retriable = true, timeoutMs = this.options.requestTimeoutMs } = {}) {
    if (this.state === ConnectionState.closed || this.state === ConnectionState.idle) {
      return Promise.reject(new ChatError("ERR_NOT_CONNECTED", "not connected: call connect() first", { requestType: type }));
    }
    return new Promise((resolve, reject) => {
      const id = ++this.lastRequestId;
      const text = JSON.stringify({ ...params, id, type });
      const request = { id, type, params, text, retriable, resolve, reject };
      request.timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ChatError("ERR_TIMEOUT", `no answer to ${type} within ${timeoutMs} ms`, { requestType: type }));
      }, timeoutMs);
      this.pending.set(id, request);
      if (this.state === ConnectionState.open && this.socket) this.transmit(request);
    });
  }

  transmit(request) {
    try {
      this.socket.send(request.text);
    } catch {
      // The socket is going; its close event re-sends or fails the request.
    }
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
    if (!request) return; // answered already, or timed out
    this.pending.delete(frame.id);
    clearTimeout(request.timer);
    if (frame.type === "ok") {
      request.resolve(frame.result);
    } else {
      const error = frame.error || {};
      request.reject(new ChatError(error.code || "ERR_INTERNAL", error.message,
        { retryAfterMs: error.retryAfterMs, requestType: request.type }));
    }
  }

  event(name, data) {
    if (name === "session.expiring") this.tokenStale = true;
    this.publish(name, data);
    if (name === "message.new" && data) this.feedMessage(data);
    if (name === "session.resync" && Array.isArray(data?.channelIds)) {
      for (const channelId of data.channelIds) this.catchUp(channelId);
    }
  }

  // MARK: Users (§4)

  /** `me`: `{ user, blockedUserIds }`. */
  me() {
    return this.request("me");
  }

  /** `user.get`: a User. */
  user(userId) {
    return this.request("user.get", { userId });
  }

  /** `user.list` by ids (at most 250) or by a metadata value, paged: `{ users, next }`. */
  users({ userIds, metadataKey, metadataValues, limit = 20, cursor } = {}) {
    return this.request("user.list", defined({ userIds, metadataKey, metadataValues, limit, cursor }));
  }

  /** `user.update` of the caller's own profile (`metadata` replaces the whole map): the User. */
  updateMe({ name, image, metadata } = {}) {
    return this.request("user.update", defined({ name, image, metadata }));
  }

  // MARK: Blocking (Sendbird's blockUser, CometChat's blockUsers)

  /** Blocks users (1–100 ids): `{ id: "success" | "ERR_UID_NOT_FOUND" | "ERR_CANNOT_BLOCK_SELF" | … }`. */
  async block(userIds) {
    return (await this.request("user.block", { userIds })).results;
  }

  /** Unblocks users (1–100 ids), a result per id as for `block`. */
  async unblock(userIds) {
    return (await this.request("user.unblock", { userIds })).results;
  }

  /**
   * A query paging through blocked users: `direction` "byMe" (default), "me" (who blocked
   * me) or "both" (the last two only where the gateway reveals blocks), `limit` 1–100,
   * `search` (a prefix of id or name), `userIds`. Call `next()` until it resolves with null.
   */
  blockedUsersQuery(filters = {}) {
    return new BlockedUsersQuery(this, filters);
  }

  // MARK: Channels (§4)

  /**
   * `channel.create` (`type` "group" or "open"): the Channel. Not sent again after a lost
   * connection unless `distinct` (a repeat could create a second channel): it fails with
   * ERR_DISCONNECTED instead.
   */
  createChannel({ type = "group", userIds = [], name, distinct = false, pushFromBlockedUsers } = {}) {
    return this.request("channel.create", defined({ channelType: type, userIds, name, distinct, pushFromBlockedUsers }),
      { retriable: distinct });
  }

  /** `channel.get`: the Channel. */
  channel(channelId) {
    return this.request("channel.get", { channelId });
  }

  /** `channel.list`, newest activity first, with each channel's unread count: `{ channels, next }`. */
  channels({ limit = 20, cursor } = {}) {
    return this.request("channel.list", defined({ limit, cursor }));
  }

  invite(channelId, userIds) {
    return this.request("channel.invite", { channelId, userIds });
  }

  join(channelId) {
    return this.request("channel.join", { channelId });
  }

  leave(channelId) {
    return this.request("channel.leave", { channelId });
  }

  updateChannel(channelId, { name, pushFromBlockedUsers } = {}) {
    return this.request("channel.update", defined({ channelId, name, pushFromBlockedUsers }));
  }

  // MARK: Messages

  /**
   * `message.send`: resolves with the stored Message. It carries a `clientMessageId`
   * (a fresh one unless given), so a send cut off by a dropped connection goes again once
   * the client is back and is stored once. With `retryRateLimited` (here or in the
   * options), ERR_RATE_LIMITED waits `retryAfterMs` and sends again.
   */
  async send(channelId, text, { data, clientMessageId = newClientMessageId(), retryRateLimited = this.options.retryRateLimited } = {}) {
    const params = defined({ channelId, text, data, clientMessageId });
    for (;;) {
      try {
        const stored = await this.request("message.send", params);
        this.feedMessage(stored);
        return stored;
      } catch (error) {
        if (!(error.code === "ERR_RATE_LIMITED" && retryRateLimited)) throw error;
        await sleep(Math.max(error.retryAfterMs ?? 200, 1));
      }
    }
  }

  /**
   * `message.history`: the newest `limit` messages before `beforeSeq` (or the newest), or
   * the first `limit` after `afterSeq`, or the page a `cursor` names; ascending:
   * `{ messages, next }`.
   */
  history(channelId, { beforeSeq, afterSeq, cursor, limit = 50 } = {}) {
    return this.request("message.history", defined({ channelId, beforeSeq, afterSeq, cursor, limit }));
  }

  /**
   * Every message of a channel this user can see, exactly once and in `seq` order, from
   * `afterSeq` on (omitted: from the newest message now), across reconnects; own messages
   * included once their send is answered. A MessageStream: iterate it with `for await`,
   * or pass `onMessage` to get each message in a listener. A second stream of a channel
   * already followed starts where the first one is.
   */
  messages(channelId, { afterSeq, onMessage } = {}) {
    const stream = new MessageStream(onMessage, (closed) => this.stopStream(channelId, closed));
    if (this.state === ConnectionState.closed || this.state === ConnectionState.idle) {
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
      stream.ready = this.channel(channelId).then((channel) => join(channel.lastMessage?.seq ?? 0));
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
  feedMessage(message) {
    const entry = this.feeds.get(message.channelId);
    if (!entry) return;
    const { deliver, action } = entry.feed.received(message);
    this.hand(entry, deliver);
    if (action) this.readHistory(message.channelId, entry, action.readHistoryAfterSeq);
  }

  /** Reads what a followed channel got after the last message handed to the app. */
  catchUp(channelId) {
    const entry = this.feeds.get(channelId);
    if (!entry || this.state !== ConnectionState.open) return;
    const action = entry.feed.catchUp();
    if (action) this.readHistory(channelId, entry, action.readHistoryAfterSeq);
  }

  async readHistory(channelId, entry, afterSeq) {
    const read = {}; // this read; a lost connection or a newer read makes it stale
    entry.read = read;
    let page;
    for (;;) {
      try {
        page = await this.request("message.history", { channelId, afterSeq, limit: this.options.historyPageSize },
          { retriable: false });
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
          this.emit("catchUp.error", { channelId, error });
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

  hand(entry, messages) {
    for (const message of messages) {
      for (const stream of [...entry.streams]) stream.push(message);
    }
  }

  // MARK: Typing, read state, presence (§14)

  startTyping(channelId) {
    return this.request("typing.start", { channelId });
  }

  stopTyping(channelId) {
    return this.request("typing.stop", { channelId });
  }

  /** `channel.markRead`: everything up to `seq` read (a mark never moves back): `{ channelId, lastReadSeq, unreadCount }`. */
  markRead(channelId, seq) {
    return this.request("channel.markRead", { channelId, seq });
  }

  /** `presence.subscribe` (1–100 ids): their state now; `user.presence` events from then on, kept across reconnects. */
  async subscribePresence(userIds) {
    const result = await this.request("presence.subscribe", { userIds });
    for (const id of userIds) this.presenceFollowed.add(id);
    return result.users;
  }

  async unsubscribePresence(userIds) {
    for (const id of userIds) this.presenceFollowed.delete(id);
    await this.request("presence.unsubscribe", { userIds });
  }
}

function detach(socket) {
  socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
}

/** `fields` without its undefined values (JSON would drop them; a Map of params reads better without them). */
function defined(fields) {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

// MARK: Helpers for apps

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
