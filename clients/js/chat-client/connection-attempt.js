// connection-attempt.js: one attempt at a connection (PROTOCOL.md §1, v1.2): the upgrade
// to `?auth=message`, then the token as the first message, so the token never goes into
// the URL and a refusal comes back as a close code the browser can read.

import { refusalCode } from "./close-codes.js";

/** Takes the client's handlers off `socket`, so nothing it reports reaches the client any more. */
export function detach(socket) {
  socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
}

/**
 * Opens a socket to `options.url` with `WebSocket` and authenticates with `token`. Resolves
 * with null once `auth` was answered, after calling `authenticated(socket, me)` (`me` is the
 * reply's result; the caller takes the socket over there, before any other frame), or with
 * `{ reason, code, closeCode }` when it failed before: `closeCode` is the gateway's close
 * code (4004, 4001, 4002, 4003, 4005 for a refusal), `code` the §11 code it named.
 * `isCancelled()` true (the client closed meanwhile) fails it; `nextRequestId()` gives the
 * `auth` message its id.
 */
export function attemptConnection({ WebSocket, options, token, nextRequestId, isCancelled, authenticated }) {
  const url = new URL(options.url);
  url.searchParams.delete("token");
  url.searchParams.set("auth", "message");
  if (options.device) url.searchParams.set("device", options.device);
  if (options.hideBlocked) url.searchParams.set("hideBlocked", "1");
  let socket;
  try {
    socket = new WebSocket(url.toString());
  } catch (error) {
    return Promise.resolve({ reason: `cannot open ${options.url}: ${error?.message || error}`, code: "ERR_CONNECT_FAILED" });
  }
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
    const timer = setTimeout(() => failed(`not open within ${options.connectTimeoutMs} ms`), options.connectTimeoutMs);
    socket.onopen = () => {
      if (isCancelled()) {
        failed("closed by the client");
        return;
      }
      authId = nextRequestId();
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
      if (isCancelled()) {
        failed("closed by the client");
        return;
      }
      authenticated(socket, frame.result);
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
