// client.js: ChatClient, the SDK's client. It holds the options and puts the parts
// together: the Connection (socket, reconnects, keep-alive), the PendingRequests that match
// replies to requests, the EventListeners, and the FollowedChannels behind `messages()`.
// Each request of PROTOCOL.md §4, §14, §15 and §16 is a method here.

import { BlockedUsersQuery } from "./blocked-users-query.js";
import { newClientMessageId } from "./client-message-id.js";
import { Connection } from "./connection.js";
import { ConnectionState } from "./connection-state.js";
import { ChatError } from "./errors.js";
import { EventListeners } from "./event-listeners.js";
import { FollowedChannels } from "./followed-channels.js";
import { PendingRequests } from "./pending-requests.js";
import { sleep } from "./sleep.js";
import { TokenSource } from "./token-source.js";

export class ChatClient {
  /**
   * @param {object} options
   * @param {string} options.url  the WebSocket endpoint, e.g. wss://chat.example.com/v1/ws
   * @param {string|(() => string|Promise<string>)} options.token  a JWT, or a function returning one: called
   *   before the first connect and again after `session.expiring`, a 4001 close, or a refused token
   * @param {Function} [options.WebSocket]  a WebSocket class with the browser's API (default: globalThis.WebSocket)
   * @param {string} [options.device]  the connection's `device` label (§1)
   * @param {boolean} [options.hideBlocked]  `hideBlocked=1` (§5)
   * @param {boolean} [options.retryRateLimited=false]  a send, edit, delete, reaction or flag refused with ERR_RATE_LIMITED
   *   waits `retryAfterMs` and goes again; ERR_SLOW_MODE is not waited out (the channel's rule, §16, for the app to show)
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
    const WebSocket = options.WebSocket || globalThis.WebSocket;
    if (!WebSocket) {
      throw new TypeError("no WebSocket class: pass options.WebSocket (Node 20: run with --experimental-websocket)");
    }
    this.events = new EventListeners();
    this.requests = new PendingRequests();
    this.followed = new FollowedChannels(this);
    this.presenceFollowed = new Set();
    /** The signed-in user's id, once connected. */
    this.userId = null;
    this.connection = new Connection({
      options: this.options,
      WebSocket,
      tokens: new TokenSource(token),
      requests: this.requests,
      events: this.events,
      hooks: {
        frame: (data) => this.received(data),
        opened: ({ reconnected, me }) => this.opened(reconnected, me),
        lost: () => this.followed.connectionLost(),
        ended: () => this.followed.finishAll(),
        probe: (timeoutMs) => this.request("me", {}, { retriable: false, timeoutMs }),
      },
    });
  }

  /** The connection's state, a ConnectionState value. */
  get state() {
    return this.connection.state;
  }

  // MARK: Events

  /**
   * Calls `listener(data)` for each `name` event (PROTOCOL.md §7); `"*"` gets every event
   * as `{ event, data }`; `"state"` gets the connection's changes as `{ state, previous,
   * reason?, closeCode?, attempt?, retryInMs?, reconnected? }`; `"refused"` gets the ChatError
   * with which the gateway ended the client for good (`closeCode` 4002 deactivated, 4003
   * banned, or a refused token), just before the `closed` state. Returns a function that stops it.
   */
  on(name, listener) {
    return this.events.on(name, listener);
  }

  off(name, listener) {
    this.events.off(name, listener);
  }

  /** Calls `listener({ event, data })` for each event about `channelId` (messages, updates, typing, read marks). */
  onChannel(channelId, listener) {
    return this.events.onChannel(channelId, listener);
  }

  // MARK: Connection

  /**
   * Connects; rejects with ERR_CONNECT_FAILED when the gateway cannot be reached, and with
   * the refusal's §11 code and `closeCode` when it refuses the user (a refused token, with a
   * token function, after a second try with a fresh one). Once connected, the client
   * reconnects by itself until `close()` or a refusal that no retry can change.
   */
  connect() {
    return this.connection.connect();
  }

  /**
   * The ChatError with which the gateway ended the client for good (`closeCode` 4002
   * deactivated, 4003 banned app-wide, 4004/4001 a refused token), or null; reset by `connect()`.
   */
  get refusal() {
    return this.connection.refusal;
  }

  /** Closes for good: no reconnect; waiting requests fail with ERR_NOT_CONNECTED; message streams end. */
  close() {
    this.connection.close();
  }

  /** `close()`, under the Swift SDK's name. */
  disconnect() {
    this.close();
  }

  /** Skips the wait before the next reconnect attempt (e.g. when the browser says it is online again). */
  reconnectNow() {
    this.connection.reconnectNow();
  }

  /** Resolves when the connection is open (at once if it is); rejects after `timeoutMs` or when the client closes. */
  whenOpen(timeoutMs = this.options.requestTimeoutMs) {
    return this.connection.whenOpen(timeoutMs);
  }

  /** A connection opened (its waiting requests went out again): presence and followed channels are brought back. */
  opened(reconnected, me) {
    if (me?.user?.id) this.userId = me.user.id; // whose reactions are this user's own (applyReaction)
    if (this.presenceFollowed.size) {
      const users = [...this.presenceFollowed];
      for (let start = 0; start < users.length; start += 100) {
        this.request("presence.subscribe", { userIds: users.slice(start, start + 100) }).catch(() => {});
      }
    }
    this.followed.catchUpAll();
    this.events.emit("open", { reconnected, me });
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
    const { request, answer } = this.requests.add(type, params, { retriable, timeoutMs });
    if (this.connection.isOpen) this.connection.transmit(request.text);
    return answer;
  }

  /** A frame from the open connection: an event, or the reply to a request. */
  received(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      this.events.emit("protocol.error", { reason: "a frame that is not JSON", frame: String(data).slice(0, 200) });
      return;
    }
    if (frame.type === "event") {
      this.event(frame.event, frame.data);
      return;
    }
    this.requests.settle(frame);
  }

  event(name, data) {
    if (name === "session.expiring") this.connection.tokens.markStale();
    this.events.publish(name, data);
    if (name === "message.new" && data) this.followed.received(data);
    if (name === "message.updated" && data?.message) this.followed.updated(data.message);
    if ((name === "reaction.added" || name === "reaction.removed") && data) {
      this.followed.reacted({ ...data, added: name === "reaction.added" });
    }
    if (name === "session.resync" && Array.isArray(data?.channelIds)) {
      for (const channelId of data.channelIds) this.followed.catchUp(channelId);
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

  /**
   * `channel.update`: the Channel; fields left out keep their value. Renaming is open to every
   * member, `pushFromBlockedUsers` to the creator; `frozen` and `slowModeSeconds` (0–3600, 0
   * turns it off) to owners and moderators (§16), others get ERR_FORBIDDEN.
   */
  updateChannel(channelId, { name, pushFromBlockedUsers, frozen, slowModeSeconds } = {}) {
    return this.request("channel.update", defined({ channelId, name, pushFromBlockedUsers, frozen, slowModeSeconds }));
  }

  // MARK: Messages

  /**
   * `message.send`: resolves with the stored Message. It carries a `clientMessageId`
   * (a fresh one unless given), so a send cut off by a dropped connection goes again once
   * the client is back and is stored once. `parentSeq` sends it as a reply in that message's
   * thread (§15; a reply cannot be a parent); `mentionedUserIds` (at most 25) names the
   * members it mentions. With `retryRateLimited` (here or in the options), ERR_RATE_LIMITED
   * waits `retryAfterMs` and sends again. A channel's moderation refuses a send with
   * ERR_CHANNEL_FROZEN, or ERR_SLOW_MODE with `retryAfterMs` (never waited out: the user waits,
   * or does not send it).
   */
  async send(channelId, text, { data, parentSeq, mentionedUserIds, clientMessageId = newClientMessageId(),
    retryRateLimited = this.options.retryRateLimited } = {}) {
    const params = defined({ channelId, text, data, parentSeq, mentionedUserIds, clientMessageId });
    const stored = await this.requestWaitingOutRateLimits("message.send", params, retryRateLimited);
    this.followed.received(stored, { live: false });
    return stored;
  }

  /** A request that, with `retryRateLimited`, waits out ERR_RATE_LIMITED and goes again. */
  async requestWaitingOutRateLimits(type, params, retryRateLimited = this.options.retryRateLimited, { retriable = true } = {}) {
    for (;;) {
      try {
        return await this.request(type, params, { retriable });
      } catch (error) {
        if (!(error.code === "ERR_RATE_LIMITED" && retryRateLimited)) throw error;
        await sleep(Math.max(error.retryAfterMs ?? 200, 1));
      }
    }
  }

  /**
   * `message.history`: the newest `limit` messages before `beforeSeq` (or the newest), or
   * the first `limit` after `afterSeq`, or the page a `cursor` names; ascending:
   * `{ messages, next }`. Without `parentSeq` every message of the channel, replies
   * included (each with its `parentSeq`); with it, the replies of that thread only.
   */
  history(channelId, { beforeSeq, afterSeq, parentSeq, cursor, limit = 50 } = {}) {
    return this.request("message.history", defined({ channelId, beforeSeq, afterSeq, parentSeq, cursor, limit }));
  }

  /** The replies in the thread of message `parentSeq`, ascending: `{ messages, next }`. */
  thread(channelId, parentSeq, { beforeSeq, afterSeq, cursor, limit = 50 } = {}) {
    return this.history(channelId, { beforeSeq, afterSeq, parentSeq, cursor, limit });
  }

  /**
   * A channel's messages from `afterSeq` on (omitted: from the newest message now), across
   * reconnects, own messages included once their send is answered, as a MessageStream of
   * items: each visible message once as `{ type: "new", message }`, in `seq` order; each later
   * state of one as `{ type: "updated", message }` (edits, deletes, reply counts; after a
   * reconnect, whatever changed while the client was away, read with `message.changes`);
   * live reaction counts as `{ type: "reactions", reaction }` (fold them in with
   * `applyReaction`). Iterate it with `for await`, or pass `onItem` to get each item in a
   * listener (`onMessage`, the form before v1.2, gets the new messages only).
   * `afterVersion`: the channel version the app's stored messages up to `afterSeq` are
   * current to; changes made since to those come as "updated". A second stream of a
   * channel already followed starts where the first one is.
   */
  messages(channelId, { afterSeq, afterVersion, onItem, onMessage } = {}) {
    return this.followed.follow(channelId, { afterSeq, afterVersion, onItem, onMessage });
  }

  // MARK: The message lifecycle (§15)
  // Edits, deletes and reactions have their own per-user rate (ERR_RATE_LIMITED with
  // retryAfterMs, waited out with `retryRateLimited`); each resolves with the message's new
  // state, which a followed channel's stream hands out at once as "updated".

  /** `message.update` of an own message: new `text`, `data` and/or `mentionedUserIds`. Resolves with the Message. */
  async updateMessage(channelId, seq, { text, data, mentionedUserIds } = {}) {
    return this.changed(await this.requestWaitingOutRateLimits("message.update",
      defined({ channelId, seq, text, data, mentionedUserIds })));
  }

  /** `message.delete`: resolves with the tombstone; deleting it again answers the same tombstone. */
  async deleteMessage(channelId, seq) {
    return this.changed(await this.requestWaitingOutRateLimits("message.delete", { channelId, seq }));
  }

  /** `reaction.add`: one reaction of `kind` (1–64 bytes, no control characters) by this user; again is a no-op. */
  async addReaction(channelId, seq, kind) {
    return this.changed(await this.requestWaitingOutRateLimits("reaction.add", { channelId, seq, kind }));
  }

  /** `reaction.remove`: removing an absent reaction is a no-op that answers as usual. */
  async removeReaction(channelId, seq, kind) {
    return this.changed(await this.requestWaitingOutRateLimits("reaction.remove", { channelId, seq, kind }));
  }

  /** One page of `message.changes` after `afterVersion` (limit 1–100): `{ messages, version, next }`. */
  changesPage(channelId, afterVersion, { limit = 100 } = {}) {
    return this.request("message.changes", { channelId, afterVersion, limit });
  }

  /**
   * Everything created or changed in a channel after `afterVersion`, every page read:
   * `{ messages, version }`, each message once in its latest state (one that changed again
   * between two pages is kept in its newer state), ascending `version`; `version` is what the
   * caller is now caught up to.
   */
  async changes(channelId, afterVersion, { pageSize = 100 } = {}) {
    const latest = new Map();
    let cursor = afterVersion;
    for (;;) {
      const page = await this.changesPage(channelId, cursor, { limit: pageSize });
      for (const message of page.messages) {
        if (message.version > (latest.get(message.seq)?.version ?? -1)) latest.set(message.seq, message);
      }
      // A page can be short, even empty, with more after it; a `next` that does not move on
      // would read the same page forever.
      if (typeof page.next !== "number" || page.next <= cursor) {
        return { messages: [...latest.values()].sort((a, b) => a.version - b.version), version: page.version };
      }
      cursor = page.next;
    }
  }

  /** An answer that is a message's new state: to the feed of its channel, and to the caller. */
  changed(message) {
    this.followed.updated(message, { live: false });
    return message;
  }

  // MARK: Moderation (§16)
  // The gateway decides who may do what (ERR_FORBIDDEN otherwise). Freeze and slow mode are
  // `updateChannel(channelId, { frozen, slowModeSeconds })`.

  /**
   * `channel.setRole`: an owner makes a member a "moderator", or a moderator a "member" again
   * ("owner" is the backend's to give: ERR_BAD_REQUEST). Resolves with the Channel and its `roles`.
   */
  setRole(channelId, userId, role) {
    return this.request("channel.setRole", { channelId, userId, role });
  }

  /**
   * `channel.ban` (owners and moderators): a plain ban takes the user out of the channel while
   * it stands; a `shadow` ban keeps it in, answered as ever, but nothing it produces reaches
   * anyone else. `untilMs` (ms since 1970): when the ban ends by itself; left out, at `unban`.
   */
  ban(channelId, userId, { shadow = false, untilMs } = {}) {
    return this.request("channel.ban", defined({ channelId, userId, shadow, untilMs }));
  }

  /** `channel.unban`: lifts a ban (lifting none also succeeds); a plainly banned user is not put back. */
  unban(channelId, userId) {
    return this.request("channel.unban", { channelId, userId });
  }

  /**
   * `channel.mute`: its messages still arrive and count as unread, but never push this user
   * (mentions included), until `untilMs` or `unmuteChannel`. Resolves with the Channel (`muted` true).
   */
  muteChannel(channelId, { untilMs } = {}) {
    return this.request("channel.mute", defined({ channelId, untilMs }));
  }

  /** `channel.unmute`: resolves with the Channel (`muted` false). */
  unmuteChannel(channelId) {
    return this.request("channel.unmute", { channelId });
  }

  /**
   * `user.mute` (1–100 ids): their messages never push this user, their typing is not sent to
   * it; nobody is told. `{ id: "success" | "ERR_UID_NOT_FOUND" | "ERR_BAD_REQUEST" (own id) }`.
   */
  async muteUsers(userIds) {
    return (await this.request("user.mute", { userIds })).results;
  }

  /** `user.unmute` (1–100 ids), a result per id as for `muteUsers`. */
  async unmuteUsers(userIds) {
    return (await this.request("user.unmute", { userIds })).results;
  }

  /**
   * `message.flag`: reports message `seq` to the app's backend, with a `reason` of at most 500
   * characters. Flags share the change rate (waited out with `retryRateLimited`). Not sent
   * again after a lost connection (a repeat would file a second flag): it fails with
   * ERR_DISCONNECTED instead.
   */
  async flagMessage(channelId, seq, { reason } = {}) {
    await this.requestWaitingOutRateLimits("message.flag", defined({ channelId, seq, reason }), this.options.retryRateLimited,
      { retriable: false });
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

/** `fields` without its undefined values (JSON would drop them; a Map of params reads better without them). */
function defined(fields) {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
