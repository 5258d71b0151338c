// errors.js: the one error type the SDK rejects with, for refused requests and for
// failures of the connection itself.

/**
 * A refused request (`code` is the gateway's, PROTOCOL.md §11; `retryAfterMs` with
 * ERR_RATE_LIMITED and with ERR_SLOW_MODE, a channel's slow mode, §16) or a failure of the
 * connection itself: ERR_DISCONNECTED (the connection dropped before the answer, for a
 * request that is not safe to repeat), ERR_TIMEOUT (no answer within `requestTimeoutMs`),
 * ERR_NOT_CONNECTED (the client is closed), ERR_CONNECT_FAILED (`connect()` could not reach
 * the gateway). A refused `auth` rejects `connect()` with the §11 code the gateway named in
 * its close reason (ERR_NOT_LOGGED_IN, ERR_TOKEN_EXPIRED, ERR_FORBIDDEN) and `closeCode`
 * (4004, 4001, 4002, 4003, 4005). 4002 (deactivated) and 4003 (banned app-wide, §16) on a
 * live connection end the client: `client.refusal` and the `refused` event hold that error.
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
