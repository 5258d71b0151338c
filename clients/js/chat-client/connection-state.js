// connection-state.js: the states a client's connection goes through.

/** The connection's states, as `state` events report them. */
export const ConnectionState = Object.freeze({
  idle: "idle", // created, connect() not called yet
  connecting: "connecting",
  open: "open",
  reconnecting: "reconnecting",
  closed: "closed", // close(), a failed connect(), or the gateway ended the user (4002)
});
