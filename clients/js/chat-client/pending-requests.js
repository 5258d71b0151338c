// pending-requests.js: matching replies to requests. Each request gets the next id and a
// timer; a reply (`ok` or `error` with that id) settles it once, and a request that is
// still waiting when the connection drops is either sent again or failed.

import { ChatError } from "./errors.js";

export class PendingRequests {
  constructor() {
    this.lastId = 0; // the `auth` message takes its id from here too
    this.byId = new Map(); // id → { id, type, params, text, retriable, resolve, reject, timer }
  }

  /** How many requests wait for their reply. */
  get size() {
    return this.byId.size;
  }

  /** The id of the next message the client sends. */
  nextId() {
    return ++this.lastId;
  }

  /**
   * Waits for the reply to a new request `type` with `params`: `request.text` is the frame to
   * send; `answer` resolves with the reply's `result` or rejects with a ChatError, ERR_TIMEOUT
   * after `timeoutMs`.
   */
  add(type, params, { retriable, timeoutMs }) {
    let request;
    const answer = new Promise((resolve, reject) => {
      const id = this.nextId();
      const text = JSON.stringify({ ...params, id, type });
      request = { id, type, params, text, retriable, resolve, reject };
      request.timer = setTimeout(() => {
        this.byId.delete(id);
        reject(new ChatError("ERR_TIMEOUT", `no answer to ${type} within ${timeoutMs} ms`, { requestType: type }));
      }, timeoutMs);
      this.byId.set(id, request);
    });
    return { request, answer };
  }

  /** A reply frame (`ok` or `error`) settles its request; one answered already or timed out is dropped. */
  settle(frame) {
    const request = this.byId.get(frame.id);
    if (!request) return;
    this.byId.delete(frame.id);
    clearTimeout(request.timer);
    if (frame.type === "ok") {
      request.resolve(frame.result);
    } else {
      const error = frame.error || {};
      request.reject(new ChatError(error.code || "ERR_INTERNAL", error.message,
        { retryAfterMs: error.retryAfterMs, requestType: request.type }));
    }
  }

  /** A new connection is open: every waiting request goes out again, oldest first, through `transmit`. */
  resend(transmit) {
    for (const id of [...this.byId.keys()].sort((a, b) => a - b)) {
      const request = this.byId.get(id);
      if (request) transmit(request.text);
    }
  }

  /** The connection dropped: a request that is not safe to repeat fails with ERR_DISCONNECTED. */
  failNotRetriable() {
    for (const [id, request] of this.byId) {
      if (request.retriable) continue;
      this.byId.delete(id);
      clearTimeout(request.timer);
      request.reject(new ChatError("ERR_DISCONNECTED", "the connection was lost before the answer", { requestType: request.type }));
    }
  }

  /**
   * The client closed for good: every waiting request fails with ERR_NOT_CONNECTED, or with
   * the code and close code of the `refusal` (a ChatError) that ended it.
   */
  failAll(reason, refusal = null) {
    for (const request of this.byId.values()) {
      clearTimeout(request.timer);
      request.reject(new ChatError(refusal?.code ?? "ERR_NOT_CONNECTED", `the client closed: ${reason}`,
        { requestType: request.type, closeCode: refusal?.closeCode }));
    }
    this.byId.clear();
  }
}
