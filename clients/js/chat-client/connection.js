// connection.js: a client's one live connection to the gateway, through its states
// (ConnectionState): connect, reconnect with backoff after a drop, ask for a fresh token
// when the gateway refuses or expires one, give up on a refusal no retry can change, and
// close the socket a keep-alive probe finds dead. What travels over it (requests, events,
// followed channels) is the client's: it hears of each change through `hooks`.

import { attemptConnection, detach } from "./connection-attempt.js";
import { ConnectionState } from "./connection-state.js";
import { deactivatedCloseCode, isTokenRefusal, isUserRefusal, refusalCode, tokenExpiredCloseCode } from "./close-codes.js";
import { ChatError } from "./errors.js";
import { KeepAlive } from "./keep-alive.js";
import { reconnectDelay } from "./reconnect-backoff.js";

export class Connection {
  /**
   * `options`: the client's options (url, device, hideBlocked, timeouts, backoff, keepAliveMs);
   * `tokens`: a TokenSource; `requests`: the client's PendingRequests (sent again on a new
   * connection, failed when it drops or closes); `events`: where `state` and `open` go;
   * `hooks`: `frame(data)` for each frame received, `opened({ reconnected, me })`, `lost()`,
   * `ended()` (closed for good), `probe(timeoutMs)` (a request for the keep-alive; a promise).
   */
  constructor({ options, WebSocket, tokens, requests, events, hooks }) {
    this.options = options;
    this.WebSocket = WebSocket;
    this.tokens = tokens;
    this.requests = requests;
    this.events = events;
    this.hooks = hooks;
    this.state = ConnectionState.idle;
    this.socket = null;
    this.attempt = 0; // reconnect attempts since the connection was lost
    this.tokensRefused = 0; // refused tokens in a row (a fresh one refused too ends the client)
    this.reconnectTimer = null;
    this.keepAlive = new KeepAlive(options.keepAliveMs);
    this.everOpened = false;
    this.opening = null; // connect()'s promise while the first connection opens
    this.userClosed = false;
    this.refusal = null; // the ChatError with which the gateway ended the client for good
  }

  /** Whether a frame sent now goes out on an authenticated socket. */
  get isOpen() {
    return this.state === ConnectionState.open && this.socket !== null;
  }

  /** Sends `text` on the socket; a socket that is going drops it (its close re-sends or fails the request). */
  transmit(text) {
    try {
      this.socket.send(text);
    } catch {
      // The socket is going; its close event re-sends or fails the request.
    }
  }

  setState(state, details = {}) {
    const previous = this.state;
    this.state = state;
    this.events.emit("state", { state, previous, ...details });
  }

  /** ChatClient.connect. */
  connect() {
    if (this.state === ConnectionState.open) return Promise.resolve();
    if (this.opening) return this.opening;
    if (this.everOpened && this.state !== ConnectionState.closed) return this.whenOpen(this.options.requestTimeoutMs);
    this.userClosed = false;
    this.everOpened = false;
    this.refusal = null;
    this.setState(ConnectionState.connecting);
    this.opening = (async () => {
      // A refused token is asked for again once (a token function may have handed out one
      // that expired meanwhile); any other failure is the answer.
      const tries = this.tokens.canRefresh ? 2 : 1;
      let failure;
      for (let tried = 0; tried < tries; tried += 1) {
        failure = await this.open();
        if (this.userClosed) throw new ChatError("ERR_NOT_CONNECTED", "closed by the client while connecting");
        if (!failure) return;
        if (!isTokenRefusal(failure.closeCode)) break;
        this.tokens.markStale();
      }
      this.end(failure.reason, failure.closeCode ? { closeCode: failure.closeCode, final: true } : {});
      throw new ChatError(failure.code, `could not connect: ${failure.reason}`, { closeCode: failure.closeCode });
    })().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  /** ChatClient.close. */
  close() {
    if (this.state === ConnectionState.closed && !this.socket) return;
    this.end("closed by the client");
  }

  /**
   * Closed for good: no reconnect, the socket closed, waiting requests failed, then `closed`
   * reported. A final refusal (`details.final` with a `closeCode`) is the client's `refusal`:
   * waiting requests fail with its code and close code, and `refused` is reported first.
   */
  end(reason, details = {}) {
    this.userClosed = true;
    clearTimeout(this.reconnectTimer);
    this.keepAlive.stop();
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      detach(socket);
      try {
        socket.close(1000, "client closed");
      } catch {}
    }
    const refusal = details.final && details.closeCode
      ? new ChatError(refusalCode(details.closeCode, reason), reason, { closeCode: details.closeCode }) : null;
    this.refusal = refusal;
    this.requests.failAll(reason, refusal);
    this.hooks.ended();
    if (refusal) this.events.emit("refused", refusal);
    this.setState(ConnectionState.closed, { reason, ...details });
  }

  /** ChatClient.reconnectNow. */
  reconnectNow() {
    if (this.state !== ConnectionState.reconnecting || !this.reconnectTimer) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.reconnectAttempt();
  }

  /** ChatClient.whenOpen. */
  whenOpen(timeoutMs = this.options.requestTimeoutMs) {
    if (this.state === ConnectionState.open) return Promise.resolve();
    if (this.state === ConnectionState.closed) return Promise.reject(new ChatError("ERR_NOT_CONNECTED", "the client is closed"));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new ChatError("ERR_TIMEOUT", `not connected within ${timeoutMs} ms`));
      }, timeoutMs);
      const stop = this.events.on("state", ({ state }) => {
        if (state !== ConnectionState.open && state !== ConnectionState.closed) return;
        stop();
        clearTimeout(timer);
        if (state === ConnectionState.open) resolve();
        else reject(new ChatError("ERR_NOT_CONNECTED", "the client closed"));
      });
    });
  }

  /**
   * One connection attempt, with a fresh token first when the current one is stale. Resolves
   * with null once open and authenticated, or with the failure (see `attemptConnection`).
   */
  async open() {
    if (this.tokens.needsRefresh) {
      try {
        await this.tokens.refresh();
      } catch (error) {
        return { reason: `the token provider failed: ${error?.message || error}`, code: "ERR_CONNECT_FAILED" };
      }
    }
    if (this.userClosed) return { reason: "closed by the client", code: "ERR_NOT_CONNECTED" };
    return attemptConnection({
      WebSocket: this.WebSocket,
      options: this.options,
      token: this.tokens.token,
      nextRequestId: () => this.requests.nextId(),
      isCancelled: () => this.userClosed,
      authenticated: (socket, me) => this.opened(socket, me),
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
    this.keepAlive.start(() => this.probe());
    this.setState(ConnectionState.open, { reconnected });
    // Requests that waited (or were cut off) go out again, oldest first.
    this.requests.resend((text) => this.transmit(text));
    this.hooks.opened({ reconnected, me });
  }

  received(socket, data) {
    if (socket !== this.socket) return;
    this.keepAlive.received();
    this.hooks.frame(data);
  }

  /** The keep-alive found the connection silent for a period: a request with no answer in time means it is dead. */
  probe() {
    if (this.state !== ConnectionState.open) return;
    const socket = this.socket;
    this.hooks.probe(this.keepAlive.probeTimeoutMs).catch((error) => {
      // No answer in time: the connection is dead without having closed; start over.
      if (error.code !== "ERR_TIMEOUT" || socket !== this.socket) return;
      try {
        socket.close(4000, "keep-alive timeout");
      } catch {}
      this.lost(socket, null, "no answer from the gateway");
    });
  }

  /** The open socket closed (or the keep-alive gave up on it). */
  lost(socket, code, reason) {
    if (socket !== this.socket) return;
    detach(socket);
    this.socket = null;
    this.keepAlive.stop();
    if (this.userClosed) return;
    if (isUserRefusal(code)) {
      this.end(code === deactivatedCloseCode ? "this user was deactivated" : "this user was banned", { closeCode: code, final: true });
      return;
    }
    if (code === tokenExpiredCloseCode) this.tokens.markStale();
    this.requests.failNotRetriable();
    this.hooks.lost();
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
      if (!this.tokens.canRefresh || this.tokensRefused >= 2) {
        this.end(reason, { closeCode, final: true });
        return;
      }
      this.tokens.markStale();
      this.reconnectAttempt();
      return;
    }
    this.scheduleReconnect({ reason, closeCode });
  }
}
