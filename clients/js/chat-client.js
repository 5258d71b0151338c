// chat-client.js: the JavaScript SDK of the chat gateway (docs/clients.md), dependency-free
// ES modules for browsers and Node 20 with no build step. It speaks the WebSocket
// protocol (PROTOCOL.md §1–§7, §14–§16) with the same shape and rules as the Swift
// ChatClient (Sources/ChatClient):
//
//   import { ChatClient } from "./chat-client.js";
//   const client = new ChatClient({ url: "ws://127.0.0.1:8080/v1/ws", token: () => fetchTokenFromMyBackend() });
//   await client.connect();
//   const { channels } = await client.channels({ limit: 20 });
//   for await (const item of client.messages(channels[0].id)) {
//     if (item.type === "new") console.log(item.message.text);
//   }
//
// - Every request of §4, §14, §15 and §16 (moderation) is a method returning a promise of
//   the reply's `result`; a refused request rejects with a `ChatError` carrying the
//   gateway's `code` (and `retryAfterMs` for ERR_RATE_LIMITED and ERR_SLOW_MODE).
// - Events: `on(name, fn)` for one event, `on("*", fn)` for all of them,
//   `onChannel(channelId, fn)` for the events about one channel; `on("state", fn)`
//   for the connection's own changes.
// - The token never goes into the URL: the client connects to `?auth=message` and
//   sends `{"type":"auth","token"}` as its first message (PROTOCOL.md §1, v1.2), so
//   a refused token comes back as a close code the browser can read: 4004 (refused)
//   or 4001 (expired) asks the token provider once more, and a fresh token refused
//   too ends the client; 4002 (deactivated) and 4003 (banned) end it at once, with the
//   refusal as `client.refusal` and a `refused` event; 4005 (too many connections) is
//   retried with backoff.
// - Reconnects with exponential backoff and jitter; the token provider is asked
//   again after `session.expiring`, a 4001 close, or a refused token.
// - `messages(channelId, { afterSeq })` yields every message of the channel the
//   user can see exactly once, in `seq` order, as `{ type: "new", message }`, and each
//   later change of one once as `{ type: "updated", message }` or, for live reaction
//   counts, `{ type: "reactions", reaction }`, across reconnects: after one it catches up
//   with `message.changes` after the last version it saw (ChannelFeed).
// - Requests in flight when the connection drops are sent again once it is back
//   (a `message.send` with the same `clientMessageId`, so it is stored once and
//   resolves once); a non-distinct `channel.create` fails with ERR_DISCONNECTED.
//
// Node 20 has a global WebSocket only with `--experimental-websocket`; otherwise
// pass a WebSocket class with the browser's API as `options.WebSocket`.
//
// This file is the SDK's entry: it re-exports the public API from the modules in
// chat-client/, one concept each. The rest of those modules are the client's inner parts.
//   client.js               ChatClient: options, the requests as methods, the parts put together
//   connection.js           the live connection: connect, reconnect, token refresh, refusals
//   connection-attempt.js   one socket: the upgrade to ?auth=message, then the token
//   connection-state.js     ConnectionState
//   close-codes.js          the gateway's refusal close codes and what each means for a retry
//   reconnect-backoff.js    reconnectDelay: exponential backoff with jitter
//   keep-alive.js           noticing a connection that died without closing
//   token-source.js         the JWT, fixed or from a provider asked again when stale
//   pending-requests.js     request ids, reply matching, timeouts, re-sends after a drop
//   event-listeners.js      on / off / onChannel and the calls to the app's listeners
//   followed-channels.js    the channels behind messages(): feeds, streams, history reads
//   channel-feed.js         ChannelFeed: exactly once, in order, changes folded (sans-IO); applyReaction
//   message-stream.js       MessageStream: what messages() returns
//   blocked-users-query.js  BlockedUsersQuery
//   errors.js               ChatError
//   endpoint.js, client-message-id.js, token-claims.js, sleep.js: small helpers

export { BlockedUsersQuery } from "./chat-client/blocked-users-query.js";
export { applyReaction, ChannelFeed } from "./chat-client/channel-feed.js";
export { ChatClient } from "./chat-client/client.js";
export { newClientMessageId } from "./chat-client/client-message-id.js";
export { ConnectionState } from "./chat-client/connection-state.js";
export { endpointFor } from "./chat-client/endpoint.js";
export { ChatError } from "./chat-client/errors.js";
export { MessageStream } from "./chat-client/message-stream.js";
export { reconnectDelay } from "./chat-client/reconnect-backoff.js";
export { readTokenClaims } from "./chat-client/token-claims.js";
