// The web console (PROTOCOL.md §14–§16): one page that signs in, then speaks only the
// public protocol over /v1/ws through the SDK (chat-client.js, served beside it
// from clients/js/chat-client.js). This file is the app: state, rendering, input;
// mentions.js and reaction-picker.js are the composer's mentions and the emoji popover.
// Owners and moderators of a channel also get its moderation (§16): roles and bans in the
// member list, freeze, slow mode and the bans list in the Moderate dialog; everyone can
// report a message (message.flag).

import { applyReaction, ChatClient, ConnectionState, endpointFor, newClientMessageId, readTokenClaims } from "./chat-client.js";
import { mentionAtCaret, mentionedIds, textWithMentions } from "./mentions.js";
import { ReactionPicker } from "./reaction-picker.js";

const devSignInPath = "/console/dev-sign-in";
const sessionKey = "chat-console.session";
const historyPageSize = 30;
const typingRefreshMs = 3000; // the gateway forwards one typing.start per 2 s and drops the state after 10 s
const typingIdleMs = 5000; // no keystroke for this long: typing.stop
const typingShownMs = 11000; // others' typing without news for this long: hide it
const presenceChunk = 100;

const $ = (id) => document.getElementById(id);

/** `el("li", {class: "x", dataset: {seq: 1}}, child, "text")` */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// MARK: State

const state = {
  client: null,
  session: null, // { kind: "dev", userId } | { kind: "token", token }
  me: null, // User
  blocked: new Set(),
  users: new Map(), // id → User (names)
  channels: new Map(), // id → Channel
  feeds: new Map(), // channelId → the SDK's MessageStream of that channel (every message once, in order)
  activeId: null,
  conversations: new Map(), // channelId → { messages: [], earlier: {beforeSeq, cursor} | null, loaded, loading }
  presence: new Map(), // userId → { online, lastSeenAt }
  subscribed: new Set(),
  typing: new Map(), // channelId → Map(userId → timer)
  readBy: new Map(), // channelId → Map(userId → lastReadSeq)
  readStateSupported: true,
  markReadTimer: null,
  ownTyping: { channelId: null, lastSentAt: 0, idleTimer: null },
  editing: null, // { channelId, seq, inThread }: that composer (the thread's when inThread) saves an edit of the message instead of sending
  thread: null, // { channelId, parentSeq, replies: [], loaded }: the open thread
  confirmingDelete: null, // "channelId/seq" whose Delete was clicked once (a second click deletes)
  unreadRefresh: new Map(), // channelId → timer of a pending channel.get for its unread count
  confirmingBan: null, // "channelId/userId/kind" whose Ban or Shadow ban was clicked once (a second click bans)
  composerNotice: null, // { channelId, code, until? }: why the channel's moderation refused the last send there
  flagging: null, // the message the report dialog is about
};

const slowModeChoices = [0, 5, 10, 30, 60, 300, 900, 3600]; // seconds; the gateway takes 0–3600

let picker = null; // the ReactionPicker, once the page is set up
const threadDrafts = new Map();

function conversation(channelId) {
  if (!state.conversations.has(channelId)) {
    state.conversations.set(channelId, { messages: [], earlier: null, loaded: false, loading: false });
  }
  return state.conversations.get(channelId);
}

const userName = (id) => (id === state.me?.id ? "You" : state.users.get(id)?.name || id);

function otherMembers(channel) {
  return (channel.members || []).filter((id) => id !== state.me?.id);
}

function channelTitle(channel) {
  if (channel.name) return channel.name;
  const others = otherMembers(channel);
  return others.length ? others.map(userName).join(", ") : "Just you";
}

/** A 1-to-1's other member (presence dot on the channel's avatar). */
function peerOf(channel) {
  const others = otherMembers(channel);
  return channel.isOneToOne && others.length === 1 ? others[0] : null;
}

function hue(text) {
  let hash = 0;
  for (const char of text) hash = (hash * 31 + char.codePointAt(0)) >>> 0;
  return hash % 360;
}

function avatar(label, { seed = label, small = false, presenceOf = null } = {}) {
  const node = el("span", { class: small ? "avatar small" : "avatar" }, (label || "?").replace(/^[^A-Za-z0-9]+/, "").slice(0, 1) || "#");
  node.style.setProperty("background", `hsl(${hue(seed || "?")} 55% 52%)`);
  if (presenceOf) node.append(el("span", { class: "dot", dataset: { online: String(!!state.presence.get(presenceOf)?.online), user: presenceOf } }));
  return node;
}

// MARK: Formatting

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dayFormat = new Intl.DateTimeFormat(undefined, { weekday: "long", month: "short", day: "numeric" });

function shortTime(ms) {
  if (!ms) return "";
  const date = new Date(ms);
  const today = new Date();
  if (date.toDateString() === today.toDateString()) return timeFormat.format(date);
  return new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" }).format(date);
}

function describeError(error) {
  const code = error?.code || "ERR_INTERNAL";
  const friendly = {
    ERR_RATE_LIMITED: `Slow down: try again in ${((error.retryAfterMs || 1000) / 1000).toFixed(1)} s`,
    ERR_CHANNEL_NOT_FOUND: "That channel does not exist, or you are not in it",
    ERR_NOT_A_MEMBER: "You are not a member of that channel",
    ERR_UID_NOT_FOUND: "No such user (a user exists once they have signed in)",
    ERR_MESSAGE_TOO_LONG: "That message is too long",
    ERR_DISCONNECTED: "The connection dropped before the gateway answered",
    ERR_NOT_CONNECTED: "Not connected",
    ERR_TIMEOUT: "The gateway did not answer in time",
    ERR_CANNOT_BLOCK_SELF: "You cannot block yourself",
    ERR_MESSAGE_NOT_FOUND: "That message is gone, or you cannot see it",
    ERR_MESSAGE_DELETED: "That message was deleted",
    ERR_TOO_MANY_REACTIONS: "That message has as many kinds of reaction as it can take",
    ERR_FORBIDDEN: "You may not do that",
    ERR_TOO_MANY_IDS: "Too many people mentioned (at most 25)",
    ERR_CHANNEL_FROZEN: "This channel is frozen: only owners and moderators can send",
    ERR_SLOW_MODE: `Slow mode: you can send again in ${Math.max(1, Math.ceil((error.retryAfterMs || 1000) / 1000))} s`,
  }[code];
  return { code, text: friendly || error?.message || code };
}

function toast(text, { kind = "info", code = null, ms = 5000 } = {}) {
  const node = el("div", { class: "toast", dataset: { kind }, role: kind === "error" ? "alert" : "status" },
    el("span", {}, text), code ? el("code", {}, code) : null);
  $("toasts").append(node);
  setTimeout(() => node.remove(), ms);
}

function showError(error, context) {
  const { code, text } = describeError(error);
  toast(context ? `${context}: ${text}` : text, { kind: "error", code });
}

// MARK: Sign-in

async function startSignIn() {
  const saved = readSavedSession();
  const devOffered = await fetch(devSignInPath, { cache: "no-store" }).then((r) => r.ok).catch(() => false);
  $("dev-sign-in").hidden = !devOffered;
  if (devOffered) {
    const quick = $("dev-quick");
    quick.replaceChildren(...["alice", "bob", "carol"].map((name) =>
      el("button", { type: "button", onclick: () => signIn({ kind: "dev", userId: name }) }, name)));
  }
  if (saved && (saved.kind === "token" || devOffered)) {
    signIn(saved);
    return;
  }
  showSignIn();
}

function showSignIn(message) {
  $("app").hidden = true;
  $("sign-in").hidden = false;
  const error = $("sign-in-error");
  error.hidden = !message;
  error.textContent = message || "";
  if (!$("dev-sign-in").hidden) $("dev-user").focus();
  else $("token-input").focus();
}

function readSavedSession() {
  try {
    return JSON.parse(sessionStorage.getItem(sessionKey));
  } catch {
    return null;
  }
}

async function devToken(userId) {
  const response = await fetch(devSignInPath, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ userId }),
    cache: "no-store",
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(body.error?.message || `dev sign-in answered ${response.status}`), { code: body.error?.code });
  return body.token;
}

async function signIn(session) {
  if (session.kind === "token") {
    const claims = readTokenClaims(session.token);
    if (!claims || !claims.sub) return showSignIn("That is not a JWT (three base64url parts, with a sub claim).");
    if (claims.exp && claims.exp * 1000 < Date.now()) return showSignIn(`That token expired at ${new Date(claims.exp * 1000).toLocaleString()}.`);
  }
  const getToken = session.kind === "dev" ? () => devToken(session.userId) : null;
  const client = new ChatClient({
    url: endpointFor(window.location),
    token: getToken || session.token,
    device: "web-console",
  });
  wire(client);
  try {
    await client.connect();
  } catch (error) {
    client.close();
    sessionStorage.removeItem(sessionKey);
    // The SDK sends the token after the upgrade, so a refusal says why (its close code).
    const why = {
      4001: "That token has expired.",
      4002: "That user is deactivated.",
      4003: "That user is banned.",
      4004: "The gateway did not accept that token (wrong secret, or not a valid user id).",
      4005: "That user already holds as many connections as the gateway allows.",
    }[error.closeCode];
    const reason = session.kind === "dev"
      ? `Could not sign in as ${session.userId}: ${why || error.message}`
      : why || `The gateway cannot be reached (${error.message}).`;
    return showSignIn(reason);
  }
  state.client = client;
  state.session = session;
  sessionStorage.setItem(sessionKey, JSON.stringify(session));
  $("sign-in").hidden = true;
  $("app").hidden = false;
  await loadEverything();
}

function signOut() {
  state.client?.close();
  sessionStorage.removeItem(sessionKey);
  window.location.reload();
}

// MARK: Loading

async function loadEverything() {
  const client = state.client;
  try {
    const me = await client.request("me");
    state.me = me.user;
    state.users.set(me.user.id, me.user);
    state.blocked = new Set(me.blockedUserIds || []);
    renderMe();
    const channels = [];
    let page = await client.request("channel.list", { limit: 100 });
    channels.push(...page.channels);
    while (page.next && channels.length < 500) {
      page = await client.request("channel.list", { limit: 100, cursor: page.next });
      channels.push(...page.channels);
    }
    const seen = new Set();
    for (const channel of channels) {
      seen.add(channel.id);
      followChannel(mergeChannel(channel));
    }
    for (const id of [...state.channels.keys()]) if (!seen.has(id)) forgetChannel(id);
    await loadPeople(channels.flatMap((c) => c.members || []));
    renderChannels();
    if (state.activeId) {
      if (!state.channels.has(state.activeId)) closeChannel();
      else renderConversation();
    }
    markReadSoon();
  } catch (error) {
    showError(error, "Loading your channels");
  }
}

/** Keeps the local read state when an event's channel lacks it (a gateway before v1.1). */
function mergeChannel(channel) {
  const known = state.channels.get(channel.id);
  const merged = { ...channel };
  if (merged.unreadCount === undefined) merged.unreadCount = known?.unreadCount ?? 0;
  if (merged.lastReadSeq === undefined) merged.lastReadSeq = known?.lastReadSeq ?? 0;
  state.channels.set(channel.id, merged);
  return merged;
}

/**
 * Hands every message of `channel` after the one its list entry shows to receiveMessage,
 * once and in order, and every later change of a message (edit, delete, reply count,
 * reactions) to receiveUpdate / receiveReaction, across reconnects: the SDK's feed, which
 * catches up with message.changes after the channel version the list entry was read at.
 */
function followChannel(channel) {
  if (state.feeds.has(channel.id)) return;
  state.feeds.set(channel.id, state.client.messages(channel.id, {
    afterSeq: channel.lastMessage?.seq ?? 0,
    afterVersion: channel.version, // undefined from a gateway before v1.2: the SDK asks for it
    onItem: receiveItem,
  }));
}

/** One item of a channel's feed. */
function receiveItem(item) {
  if (item.type === "new") receiveMessage(item.message);
  else if (item.type === "updated") receiveUpdate(item.message);
  else if (item.type === "reactions") receiveReaction(item.reaction);
}

function forgetChannel(channelId) {
  state.feeds.get(channelId)?.close();
  state.feeds.delete(channelId);
  state.channels.delete(channelId);
}

/** Names for new user ids, and presence for them. */
async function loadPeople(ids) {
  const client = state.client;
  const unknown = [...new Set(ids)].filter((id) => !state.users.has(id));
  for (let i = 0; i < unknown.length; i += 250) {
    try {
      const page = await client.request("user.list", { userIds: unknown.slice(i, i + 250), limit: 100 });
      for (const user of page.users) state.users.set(user.id, user);
    } catch (error) {
      showError(error, "Loading names");
    }
  }
  const toFollow = [...new Set(ids)].filter((id) => id !== state.me.id && !state.subscribed.has(id));
  for (let i = 0; i < toFollow.length; i += presenceChunk) {
    const chunk = toFollow.slice(i, i + presenceChunk);
    try {
      const result = await client.request("presence.subscribe", { userIds: chunk });
      for (const entry of result.users) {
        state.subscribed.add(entry.userId);
        state.presence.set(entry.userId, { online: entry.online, lastSeenAt: entry.lastSeenAt });
      }
    } catch (error) {
      if (error.code !== "ERR_UNKNOWN_TYPE") showError(error, "Following presence");
    }
  }
}

// MARK: Events from the gateway

function wire(client) {
  client.on("state", ({ state: connection, retryInMs, reason, reconnected }) => {
    const label = $("connection-label");
    label.dataset.state = connection;
    label.textContent = {
      [ConnectionState.open]: "Online",
      [ConnectionState.connecting]: "Connecting…",
      [ConnectionState.reconnecting]: "Reconnecting…",
      [ConnectionState.closed]: "Offline",
    }[connection] || connection;
    const banner = $("banner");
    if (connection === ConnectionState.reconnecting && retryInMs !== undefined) {
      banner.dataset.kind = "warning";
      banner.replaceChildren(el("span", {}, `Connection lost. Reconnecting in ${Math.ceil(retryInMs / 1000)} s… `,
        el("span", { class: "detail" }, `(${reason})`)),
        el("button", { type: "button", onclick: () => client.reconnectNow() }, "Retry now"));
      banner.hidden = false;
    } else if (connection === ConnectionState.closed && state.client === client) {
      banner.dataset.kind = "error";
      banner.replaceChildren(el("span", {}, `Disconnected: ${reason}.`),
        el("button", { type: "button", onclick: signOut }, "Sign in again"));
      banner.hidden = false;
    } else if (connection === ConnectionState.open) {
      banner.hidden = true;
      if (reconnected) {
        // Subscriptions and typing belong to the old connection; counts may have moved.
        state.subscribed.clear();
        state.typing.forEach((users) => users.forEach(clearTimeout));
        state.typing.clear();
        renderTyping();
        loadEverything();
      }
    }
  });
  // Messages of known channels come from their feeds (followChannel); a live one in a channel
  // not known yet means someone just added us.
  client.on("message.new", (message) => {
    if (!state.channels.has(message.channelId)) discoverChannel(message.channelId);
  });
  client.on("channel.updated", (channel) => {
    if (!channel.members?.includes(state.me?.id)) {
      forgetChannel(channel.id);
      if (state.activeId === channel.id) closeChannel();
      renderChannels();
      return;
    }
    followChannel(mergeChannel(channel));
    if (state.activeId === channel.id) {
      renderHeader();
      refreshModerationViews();
    }
    loadPeople(channel.members).then(() => {
      renderChannels();
      if (state.activeId === channel.id) renderHeader();
    });
  });
  client.on("typing.start", ({ channelId, userId }) => setTyping(channelId, userId, true));
  client.on("typing.stop", ({ channelId, userId }) => setTyping(channelId, userId, false));
  // Large channels send who types as one list, which replaces the channel's.
  client.on("typing.users", ({ channelId, userIds }) => setTypingList(channelId, userIds));
  client.on("channel.read", ({ channelId, userId, lastReadSeq }) => {
    if (!state.readBy.has(channelId)) state.readBy.set(channelId, new Map());
    const map = state.readBy.get(channelId);
    map.set(userId, Math.max(map.get(userId) || 0, lastReadSeq));
    if (state.activeId === channelId) renderMessages({ keepScroll: true });
  });
  client.on("user.presence", ({ userId, online, lastSeenAt }) => {
    state.presence.set(userId, { online, lastSeenAt });
    for (const dot of document.querySelectorAll(`[data-user="${CSS.escape(userId)}"]`)) dot.dataset.online = String(online);
    if (state.activeId) renderHeader();
  });
  client.on("user.blocked", ({ userId }) => {
    state.blocked.add(userId);
    refreshBlockViews();
  });
  client.on("user.unblocked", ({ userId }) => {
    state.blocked.delete(userId);
    refreshBlockViews();
  });
  client.on("session.expiring", () => {
    if (state.session?.kind === "token") toast("Your token expires within a minute: sign in again with a new one.", { kind: "error", ms: 10000 });
  });
  client.on("catchUp.error", ({ error }) => showError(error, "Catching up"));
}

/** A channel we have not seen yet: its entry (counting what it holds) and its messages from then on. */
function discoverChannel(channelId) {
  state.client.channel(channelId)
    .then((fetched) => {
      followChannel(mergeChannel(fetched));
      return loadPeople(fetched.members);
    })
    .then(() => renderChannels())
    .catch(() => {});
}

function receiveMessage(message) {
  const channel = state.channels.get(message.channelId);
  if (!channel) return;
  channel.lastMessage = message;
  channel.lastActivityAt = Math.max(channel.lastActivityAt || 0, message.createdAt);
  setTyping(message.channelId, message.senderId, false);
  const convo = state.conversations.get(message.channelId);
  if (convo?.loaded) insertMessage(convo, message);
  if (isReply(message) && isOpenThread(message.channelId, message.parentSeq)) {
    insertReply(message);
    renderThread({ stickToBottom: true });
  }
  const isMine = message.senderId === state.me.id;
  if (!isMine) {
    if (message.channelId === state.activeId && pageIsVisible()) markReadSoon();
    else channel.unreadCount = (channel.unreadCount || 0) + 1;
  }
  renderChannels();
  if (message.channelId === state.activeId) renderMessages({ stickToBottom: true });
}

/** A newer state of a message (edited, deleted, its reply count, its reactions): replaces the one shown. */
function receiveUpdate(message) {
  const channel = state.channels.get(message.channelId);
  if (!channel) return;
  if (channel.lastMessage?.seq === message.seq) channel.lastMessage = message;
  // A deleted message no longer counts as unread (§15): the gateway's count says what is left.
  if (message.deletedAt && message.senderId !== state.me?.id && message.seq > (channel.lastReadSeq || 0)) {
    refreshUnreadSoon(message.channelId);
  }
  replaceShown(message.channelId, message.seq, () => message);
  renderChannels();
}

/** Reads a channel's unread count again shortly (once for a burst of deletes). */
function refreshUnreadSoon(channelId) {
  clearTimeout(state.unreadRefresh.get(channelId));
  state.unreadRefresh.set(channelId, setTimeout(async () => {
    state.unreadRefresh.delete(channelId);
    try {
      const fetched = await state.client.channel(channelId);
      const channel = state.channels.get(channelId);
      if (!channel) return;
      channel.unreadCount = fetched.unreadCount;
      channel.lastReadSeq = fetched.lastReadSeq;
      renderChannels();
    } catch {
      // The next channel list (a reconnect) has the count.
    }
  }, 300));
}

/** Live reaction counts: folded into the message shown (own kinds from own reactions). */
function receiveReaction(reaction) {
  replaceShown(reaction.channelId, reaction.seq, (shown) => applyReaction(shown, reaction, state.me?.id));
}

/** Replaces message `seq` of `channelId` wherever it is shown with `change(shown)`, and renders what moved. */
function replaceShown(channelId, seq, change) {
  const convo = state.conversations.get(channelId);
  const index = convo?.messages.findIndex((m) => m.seq === seq) ?? -1;
  if (index >= 0) convo.messages[index] = { ...change(convo.messages[index]), status: "sent" };
  const thread = state.thread;
  let threadChanged = false;
  if (thread && thread.channelId === channelId) {
    if (thread.parent?.seq === seq) {
      thread.parent = change(thread.parent);
      threadChanged = true;
    }
    const reply = thread.replies.findIndex((m) => m.seq === seq);
    if (reply >= 0) {
      thread.replies[reply] = change(thread.replies[reply]);
      threadChanged = true;
    }
  }
  if (index >= 0 && channelId === state.activeId) renderMessages({ keepScroll: true });
  if (threadChanged) renderThread({ keepScroll: true });
}

const isReply = (message) => message.parentSeq !== null && message.parentSeq !== undefined;

/**
 * Adds or replaces (same id, or the pending send with its clientMessageId) keeping seq order.
 * The conversation shows top-level messages; a reply shows in its thread (and as its parent's
 * reply count).
 */
function insertMessage(convo, message) {
  if (isReply(message)) return;
  const list = convo.messages;
  const existing = list.findIndex((m) => m.id === message.id
    || (message.clientMessageId && m.clientMessageId === message.clientMessageId && m.senderId === message.senderId));
  if (existing >= 0) {
    list[existing] = { ...message, status: "sent" };
  } else {
    list.push({ ...message, status: "sent" });
  }
  list.sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
}

function refreshBlockViews() {
  renderChannels();
  if (state.activeId) {
    renderHeader();
    renderMessages({ keepScroll: true });
  }
  if ($("members-dialog").open) renderMembers();
  if ($("blocked-dialog").open) loadBlocked(true);
}

// MARK: Channel list

function renderMe() {
  $("me-name").textContent = state.me.name || state.me.id;
  $("me-avatar").replaceWith(Object.assign(avatar(state.me.name || state.me.id, { seed: state.me.id }), { id: "me-avatar" }));
}

function sortedChannels() {
  return [...state.channels.values()].sort((a, b) => (b.lastActivityAt || 0) - (a.lastActivityAt || 0));
}

function renderChannels() {
  const list = $("channel-list");
  const channels = sortedChannels();
  $("channel-empty").hidden = channels.length > 0;
  list.replaceChildren(...channels.map((channel) => {
    const title = channelTitle(channel);
    const unread = channel.id === state.activeId && pageIsVisible() ? 0 : channel.unreadCount || 0;
    const typers = [...(state.typing.get(channel.id)?.keys() || [])];
    const last = channel.lastMessage;
    const preview = typers.length
      ? el("span", { class: "preview typing-preview" }, `${typers.map(userName).join(", ")} typing…`)
      : el("span", { class: "preview" }, !last ? "No messages yet"
        : `${last.senderId === state.me.id ? "You: " : ""}${last.deletedAt ? "Message deleted" : last.text}`);
    return el("button", {
      class: `channel-item${unread ? " has-unread" : ""}`,
      type: "button",
      "aria-current": channel.id === state.activeId ? "true" : "false",
      dataset: { channelId: channel.id, unread: String(unread) },
      onclick: () => openChannel(channel.id),
    },
    avatar(title, { seed: channel.id, presenceOf: peerOf(channel) }),
    el("span", { class: "text" }, el("span", { class: "name" }, title), preview),
    el("span", { class: "meta" },
      el("span", { class: "time" }, shortTime(channel.lastActivityAt)),
      unread ? el("span", { class: "unread", "aria-label": `${unread} unread` }, unread > 99 ? "99+" : String(unread)) : null));
  }));
}

// MARK: Conversation

async function openChannel(channelId) {
  if (state.activeId !== channelId) {
    stopOwnTyping();
    if (state.editing && !state.editing.inThread) cancelEditing();
    if (state.thread && state.thread.channelId !== channelId) closeThread();
  }
  state.activeId = channelId;
  $("app").dataset.view = "conversation";
  $("no-channel").hidden = true;
  $("channel-view").hidden = false;
  const draft = drafts.get(channelId) || "";
  $("composer-input").value = draft;
  autoGrow();
  renderHeader();
  renderTyping();
  renderChannels();
  renderComposerNotice();
  const convo = conversation(channelId);
  if (!convo.loaded && !convo.loading) {
    renderMessages();
    await loadLatest(channelId);
  } else {
    renderMessages({ stickToBottom: true });
  }
  markReadSoon();
  if (window.matchMedia("(min-width: 761px)").matches) $("composer-input").focus();
}

function closeChannel() {
  stopOwnTyping();
  closeThread();
  state.activeId = null;
  $("app").dataset.view = "list";
  $("channel-view").hidden = true;
  $("no-channel").hidden = false;
  renderChannels();
}

async function loadLatest(channelId) {
  const convo = conversation(channelId);
  convo.loading = true;
  try {
    const page = await state.client.request("message.history", { channelId, limit: historyPageSize });
    for (const message of page.messages) insertMessage(convo, message);
    convo.earlier = earlierFrom(page);
    convo.loaded = true;
  } catch (error) {
    showError(error, "Loading messages");
  } finally {
    convo.loading = false;
  }
  if (state.activeId === channelId) renderMessages({ stickToBottom: true });
}

/** Where the next older page starts: `beforeSeq` the oldest shown, or the cursor when a page showed nothing. */
function earlierFrom(page) {
  if (!page.next) return null;
  const oldest = page.messages[0];
  return oldest ? { beforeSeq: oldest.seq } : { cursor: page.next };
}

async function loadEarlier() {
  const channelId = state.activeId;
  const convo = conversation(channelId);
  if (!convo.earlier || convo.loading) return;
  convo.loading = true;
  const params = { channelId, limit: historyPageSize, ...convo.earlier };
  try {
    const page = await state.client.request("message.history", params);
    for (const message of page.messages) insertMessage(convo, message);
    convo.earlier = earlierFrom(page);
  } catch (error) {
    showError(error, "Loading earlier messages");
  } finally {
    convo.loading = false;
  }
  if (state.activeId === channelId) renderMessages({ keepScroll: true });
}

function renderHeader() {
  const channel = state.channels.get(state.activeId);
  if (!channel) return;
  renderModes(channel);
  const title = channelTitle(channel);
  $("channel-name").textContent = title;
  $("channel-avatar").replaceWith(Object.assign(avatar(title, { seed: channel.id, presenceOf: peerOf(channel) }), { id: "channel-avatar" }));
  const others = otherMembers(channel);
  const line = $("channel-members");
  if (!others.length) {
    line.replaceChildren(el("span", {}, "Only you so far: invite someone"));
    return;
  }
  const peer = peerOf(channel);
  if (peer) {
    const presence = state.presence.get(peer);
    const status = state.blocked.has(peer) ? "Blocked"
      : presence?.online ? "Online" : presence?.lastSeenAt ? `Last seen ${shortTime(presence.lastSeenAt)}` : "Offline";
    line.replaceChildren(el("span", {}, el("span", { class: "presence-dot", dataset: { online: String(!!presence?.online), user: peer } }),
      channel.name ? `${userName(peer)} · ${status}` : status));
    return;
  }
  line.replaceChildren(...others.slice(0, 8).map((id) => el("span", {},
    el("span", { class: "presence-dot", dataset: { online: String(!!state.presence.get(id)?.online), user: id } }),
    userName(id) + (state.blocked.has(id) ? " (blocked)" : ""))),
  others.length > 8 ? el("span", {}, `+${others.length - 8}`) : null);
}

function pageIsVisible() {
  return document.visibilityState === "visible";
}

function renderMessages({ stickToBottom = false, keepScroll = false } = {}) {
  const box = $("messages");
  const convo = conversation(state.activeId);
  const nearBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const fromBottom = box.scrollHeight - box.scrollTop;
  $("load-earlier").hidden = !convo.earlier || !convo.loaded;
  $("history-start").hidden = !convo.loaded || !!convo.earlier || convo.messages.length === 0;
  const channel = state.channels.get(state.activeId);
  const seenUpTo = latestSeen(state.activeId);
  const lastOwnSeen = [...convo.messages].reverse().find((m) => m.senderId === state.me.id && m.seq !== undefined && m.seq <= seenUpTo.seq);
  const items = [];
  let previous = null;
  for (const message of convo.messages) {
    const day = new Date(message.createdAt || Date.now()).toDateString();
    if (!previous || new Date(previous.createdAt || Date.now()).toDateString() !== day) {
      items.push(el("li", { class: "day" }, dayFormat.format(new Date(message.createdAt || Date.now()))));
      previous = null;
    }
    const mine = message.senderId === state.me.id;
    const continued = previous && previous.senderId === message.senderId && (message.createdAt - previous.createdAt) < 5 * 60000;
    let status = null;
    if (mine) {
      if (message.status === "sending") status = el("div", { class: "status" }, "Sending…");
      else if (message.status === "failed") {
        status = el("div", { class: "status failed" }, `Not sent: ${message.error}`,
          el("button", { type: "button", onclick: () => retrySend(message) }, "Retry"));
      } else if (message === lastOwnSeen) {
        status = el("div", { class: "status seen" }, channel?.isOneToOne ? "Seen" : `Seen by ${seenUpTo.names.join(", ")}`);
      } else if (message === convo.messages.filter((m) => m.senderId === state.me.id).at(-1)) {
        status = el("div", { class: "status" }, "Sent");
      }
    }
    items.push(messageElement(message, { continued, status }));
    previous = message;
  }
  if (convo.loaded && convo.messages.length === 0) {
    items.push(el("li", { class: "day" }, "No messages yet: say hello"));
  }
  $("message-list").replaceChildren(...items);
  if (stickToBottom || (nearBottom && !keepScroll)) box.scrollTop = box.scrollHeight;
  else if (keepScroll) box.scrollTop = box.scrollHeight - fromBottom;
}

/**
 * One message as a list item: sender, bubble (mentions highlighted, an "edited" mark, a
 * deleted message's placeholder), its actions (react, reply in thread, edit and delete for
 * own messages), its reactions (click one to add or take back your own), and the link to
 * its thread. `inThread`: shown in the thread view (no thread link, no reply action).
 */
function messageElement(message, { continued = false, status = null, inThread = false } = {}) {
  const mine = message.senderId === state.me.id;
  const deleted = Boolean(message.deletedAt);
  const blockedSender = !mine && state.blocked.has(message.senderId);
  const mentionsMe = !deleted && !mine && (message.mentionedUserIds || []).includes(state.me.id);
  const classes = ["message", mine && "mine", continued && "continued", blockedSender && "from-blocked", deleted && "deleted",
    mentionsMe && "mentions-me"].filter(Boolean).join(" ");
  const text = deleted
    ? el("span", { class: "text deleted-text" }, "This message was deleted")
    : el("span", { class: "text" }, textWithMentions(message.text, message.mentionedUserIds || [], displayName, state.me.id));
  const edited = message.editedAt && !deleted
    ? el("span", { class: "edited", title: `Edited ${timeFormat.format(new Date(message.editedAt))}` }, "edited") : null;
  const bubble = el("div", { class: "bubble" }, text, edited,
    el("time", {}, timeFormat.format(new Date(message.createdAt || Date.now()))));
  const replies = !inThread && !isReply(message) && message.replyCount > 0
    ? el("button", { type: "button", class: "thread-link", dataset: { action: "thread" }, onclick: () => openThread(message.channelId, message.seq) },
      `${message.replyCount} ${message.replyCount === 1 ? "reply" : "replies"}`)
    : null;
  return el("li", {
    class: classes,
    dataset: { seq: message.seq ?? "", sender: message.senderId, status: message.status || "sent", id: message.id || "",
      edited: String(Boolean(message.editedAt)), deleted: String(deleted) },
  },
  mine ? null : avatar(userName(message.senderId), { seed: message.senderId, small: true }),
  mine || continued ? null : el("div", { class: "sender" }, userName(message.senderId) + (blockedSender ? " · blocked" : "")),
  el("div", { class: "bubble-row" }, bubble, deleted || message.seq === undefined ? null : messageActions(message, { inThread })),
  deleted ? null : reactionRow(message),
  replies,
  status);
}

/** A user's display name as mentions resolve it (its name, or its id). */
const displayName = (id) => state.users.get(id)?.name || id;

/**
 * The buttons beside a stored message: react, reply, edit (own), delete (own, or anyone's for
 * the channel's owners and moderators), report (others').
 */
function messageActions(message, { inThread }) {
  const mine = message.senderId === state.me.id;
  const mayDelete = mine || moderates(state.channels.get(message.channelId));
  const confirming = state.confirmingDelete === `${message.channelId}/${message.seq}`;
  const action = (name, label, glyph, onclick, extraClass = "") => el("button", {
    type: "button", class: `action ${extraClass}`.trim(), dataset: { action: name }, title: label, "aria-label": label, onclick,
  }, glyph);
  return el("div", { class: "actions" },
    action("react", "Add a reaction", "☺", (event) => picker.open(event.currentTarget, (kind) => setReaction(message, kind, true))),
    inThread || isReply(message) ? null : action("reply", "Reply in thread", "↩", () => openThread(message.channelId, message.seq)),
    mine ? action("edit", "Edit", "✎", () => startEditing(message, { inThread })) : null,
    mayDelete ? action("delete", confirming ? "Click again to delete" : "Delete", confirming ? "Delete?" : "✕", () => deleteClicked(message),
      confirming ? "confirm" : "") : null,
    mine ? null : action("flag", "Report this message", "⚑", () => openFlag(message)));
}

/** The reaction chips under a message: kind and count; yours are pressed, and a click takes yours back or adds it. */
function reactionRow(message) {
  const counts = Object.entries(message.reactions || {}).filter(([, count]) => count > 0);
  if (!counts.length) return null;
  const own = new Set(message.ownReactions || []);
  return el("div", { class: "reactions" }, counts.map(([kind, count]) => el("button", {
    type: "button",
    class: "reaction",
    "aria-pressed": own.has(kind) ? "true" : "false",
    title: own.has(kind) ? `Take back your ${kind}` : `React with ${kind} too`,
    dataset: { kind, count: String(count) },
    onclick: () => setReaction(message, kind, !own.has(kind)),
  }, el("span", { class: "kind" }, kind), el("span", { class: "count" }, String(count)))));
}

// MARK: Changing messages (§15)

/** Adds (or takes back) this user's reaction; the answer reaches the page through the channel's feed. */
async function setReaction(message, kind, add) {
  try {
    if (add) await state.client.addReaction(message.channelId, message.seq, kind);
    else await state.client.removeReaction(message.channelId, message.seq, kind);
  } catch (error) {
    showError(error, add ? "Reacting" : "Taking back the reaction");
  }
}

/** A first click on Delete asks again (for a few seconds); the second deletes. */
async function deleteClicked(message) {
  const key = `${message.channelId}/${message.seq}`;
  if (state.confirmingDelete !== key) {
    state.confirmingDelete = key;
    rerenderShown();
    setTimeout(() => {
      if (state.confirmingDelete === key) {
        state.confirmingDelete = null;
        rerenderShown();
      }
    }, 4000);
    return;
  }
  state.confirmingDelete = null;
  try {
    await state.client.deleteMessage(message.channelId, message.seq);
  } catch (error) {
    showError(error, "Deleting");
    rerenderShown();
  }
}

function rerenderShown() {
  if (state.activeId) renderMessages({ keepScroll: true });
  if (state.thread) renderThread({ keepScroll: true });
}

/** The composer (or the thread's) edits `message` until it is sent or cancelled. */
function startEditing(message, { inThread }) {
  cancelEditing();
  state.editing = { channelId: message.channelId, seq: message.seq, inThread };
  const input = $(inThread ? "thread-input" : "composer-input");
  input.value = message.text;
  $("edit-bar").hidden = inThread;
  input.closest("form").dataset.editing = "true";
  input.focus();
  autoGrow();
}

function cancelEditing() {
  if (!state.editing) return;
  const input = $(state.editing.inThread ? "thread-input" : "composer-input");
  input.value = "";
  input.closest("form").dataset.editing = "false";
  state.editing = null;
  $("edit-bar").hidden = true;
  autoGrow();
}

/** Saves the edit the composer holds: the new text and the mentions it now has. */
async function saveEdit(text) {
  const { channelId, seq } = state.editing;
  const channel = state.channels.get(channelId);
  cancelEditing();
  try {
    await state.client.updateMessage(channelId, seq, { text, mentionedUserIds: mentionedIds(text, channel?.members || [], displayName) });
  } catch (error) {
    showError(error, "Editing");
  }
}

// MARK: Threads

const isOpenThread = (channelId, parentSeq) => state.thread?.channelId === channelId && state.thread?.parentSeq === parentSeq;

/** Opens the thread of message `parentSeq`: the message, its replies (thread history), a reply box. */
async function openThread(channelId, parentSeq) {
  picker?.close();
  if (state.editing?.inThread) cancelEditing();
  const parent = conversation(channelId).messages.find((m) => m.seq === parentSeq) ?? null;
  const thread = { channelId, parentSeq, parent, replies: [], loaded: false, more: false };
  state.thread = thread;
  $("app").dataset.thread = "open";
  $("app").dataset.view = "thread";
  $("thread-view").hidden = false;
  $("thread-input").value = threadDrafts.get(`${channelId}/${parentSeq}`) || "";
  renderThread();
  try {
    const [page, fetchedParent] = await Promise.all([
      state.client.thread(channelId, parentSeq, { limit: 100 }),
      parent ? parent : state.client.history(channelId, { beforeSeq: parentSeq + 1, limit: 1 }).then((p) => p.messages.find((m) => m.seq === parentSeq) ?? null),
    ]);
    if (state.thread !== thread) return;
    thread.parent = thread.parent ?? fetchedParent;
    for (const reply of page.messages) insertReply(reply);
    thread.more = Boolean(page.next);
    thread.loaded = true;
  } catch (error) {
    showError(error, "Loading the thread");
  }
  if (state.thread === thread) renderThread({ stickToBottom: true });
  if (window.matchMedia("(min-width: 761px)").matches) $("thread-input").focus();
}

function closeThread() {
  if (!state.thread) return;
  if (state.editing?.inThread) cancelEditing();
  state.thread = null;
  $("app").dataset.thread = "";
  $("thread-view").hidden = true;
  $("app").dataset.view = state.activeId ? "conversation" : "list";
}

/** Adds or replaces a reply of the open thread (same id, or the pending send with its clientMessageId), in seq order. */
function insertReply(message) {
  const replies = state.thread.replies;
  const existing = replies.findIndex((m) => (m.id && m.id === message.id)
    || (message.clientMessageId && m.clientMessageId === message.clientMessageId && m.senderId === message.senderId));
  if (existing >= 0) replies[existing] = { ...message, status: message.status || "sent" };
  else replies.push({ ...message, status: message.status || "sent" });
  replies.sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
}

function renderThread({ stickToBottom = false, keepScroll = false } = {}) {
  const thread = state.thread;
  if (!thread) return;
  const box = $("thread-messages");
  const fromBottom = box.scrollHeight - box.scrollTop;
  const channel = state.channels.get(thread.channelId);
  $("thread-channel").textContent = channel ? channelTitle(channel) : "";
  $("thread-parent").replaceChildren(thread.parent ? messageElement(thread.parent, { inThread: true })
    : el("li", { class: "day" }, thread.loaded ? "The first message is not available" : "Loading…"));
  const visible = thread.replies.filter((m) => m.seq !== undefined).length;
  $("thread-count").textContent = !thread.loaded ? "" : visible === 0 ? "No replies yet"
    : `${visible} ${visible === 1 ? "reply" : "replies"}${thread.more ? " (the newest 100)" : ""}`;
  $("thread-list").replaceChildren(...thread.replies.map((reply, index) => {
    const previous = thread.replies[index - 1];
    const continued = previous && previous.senderId === reply.senderId && (reply.createdAt - previous.createdAt) < 5 * 60000;
    const status = reply.status === "sending" ? el("div", { class: "status" }, "Sending…")
      : reply.status === "failed" ? el("div", { class: "status failed" }, `Not sent: ${reply.error}`) : null;
    return messageElement(reply, { continued, status, inThread: true });
  }));
  if (stickToBottom) box.scrollTop = box.scrollHeight;
  else if (keepScroll) box.scrollTop = box.scrollHeight - fromBottom;
}

/** The thread's reply box: a reply (with its mentions), or the edit of a reply it holds. */
async function sendThreadReply(event) {
  event.preventDefault();
  const thread = state.thread;
  const input = $("thread-input");
  const text = input.value.trim();
  if (!thread || !text) return;
  if (state.editing?.inThread) {
    await saveEdit(text);
    return;
  }
  input.value = "";
  threadDrafts.delete(`${thread.channelId}/${thread.parentSeq}`);
  const channel = state.channels.get(thread.channelId);
  const pending = { channelId: thread.channelId, parentSeq: thread.parentSeq, text, senderId: state.me.id, clientMessageId: newClientMessageId(),
    createdAt: Date.now(), status: "sending", mentionedUserIds: mentionedIds(text, channel?.members || [], displayName) };
  thread.replies.push(pending);
  renderThread({ stickToBottom: true });
  try {
    const stored = await state.client.send(thread.channelId, text, { parentSeq: thread.parentSeq, clientMessageId: pending.clientMessageId,
      mentionedUserIds: pending.mentionedUserIds.length ? pending.mentionedUserIds : undefined });
    if (state.thread === thread) insertReply(stored);
  } catch (error) {
    pending.status = "failed";
    pending.error = describeError(error).text;
    showError(error, "Replying");
  }
  if (state.thread === thread) renderThread({ keepScroll: true });
}

// MARK: Mention suggestions

/** While an `@word` is typed in the composer, the channel's members it may name, to click. */
function suggestMentions() {
  const list = $("mention-suggestions");
  const input = $("composer-input");
  const channel = state.channels.get(state.activeId);
  const typed = mentionAtCaret(input.value, input.selectionStart ?? input.value.length);
  const candidates = !typed || !channel ? [] : channel.members.filter((id) => id !== state.me.id
    && (id.toLowerCase().startsWith(typed.query) || displayName(id).replace(/\s+/g, "").toLowerCase().startsWith(typed.query))).slice(0, 6);
  list.hidden = candidates.length === 0;
  list.replaceChildren(...candidates.map((id) => el("li", {},
    el("button", { type: "button", dataset: { user: id }, onmousedown: (event) => event.preventDefault(), onclick: () => {
      const caret = input.selectionStart ?? input.value.length;
      input.value = `${input.value.slice(0, typed.start)}@${id} ${input.value.slice(caret)}`;
      const after = typed.start + id.length + 2;
      input.setSelectionRange(after, after);
      list.hidden = true;
      input.focus();
    } }, avatar(displayName(id), { seed: id, small: true }), el("strong", {}, displayName(id)), el("span", { class: "muted" }, `@${id}`)))));
}

/** The highest seq others have read here, and who read up to at least the newest own message. */
function latestSeen(channelId) {
  const readers = state.readBy.get(channelId);
  if (!readers || readers.size === 0) return { seq: 0, names: [] };
  const ownSeqs = conversation(channelId).messages.filter((m) => m.senderId === state.me.id && m.seq !== undefined).map((m) => m.seq);
  const seq = Math.max(...readers.values());
  const threshold = Math.max(...ownSeqs.filter((s) => s <= seq), 0);
  const names = [...readers].filter(([, read]) => read >= threshold).map(([id]) => userName(id));
  return { seq, names };
}

// MARK: Read state

function markReadSoon() {
  clearTimeout(state.markReadTimer);
  state.markReadTimer = setTimeout(markRead, 250);
}

async function markRead() {
  const channelId = state.activeId;
  if (!channelId || !pageIsVisible()) return;
  const channel = state.channels.get(channelId);
  const convo = conversation(channelId);
  if (!channel || !convo.loaded) return;
  const newest = convo.messages.filter((m) => m.seq !== undefined).at(-1);
  const hadUnread = channel.unreadCount;
  channel.unreadCount = 0;
  if (hadUnread) renderChannels();
  if (!newest || newest.seq <= (channel.lastReadSeq || 0) || !state.readStateSupported) return;
  try {
    const result = await state.client.request("channel.markRead", { channelId, seq: newest.seq });
    channel.lastReadSeq = result.lastReadSeq;
    channel.unreadCount = result.unreadCount;
    renderChannels();
  } catch (error) {
    if (error.code === "ERR_UNKNOWN_TYPE") state.readStateSupported = false; // a gateway before v1.1
    else if (error.code !== "ERR_DISCONNECTED") showError(error, "Marking read");
  }
}

// MARK: Typing

function setTyping(channelId, userId, typing) {
  if (userId === state.me?.id) return;
  if (!state.typing.has(channelId)) state.typing.set(channelId, new Map());
  const users = state.typing.get(channelId);
  clearTimeout(users.get(userId));
  if (typing) users.set(userId, setTimeout(() => setTyping(channelId, userId, false), typingShownMs));
  else if (!users.delete(userId)) return;
  if (channelId === state.activeId) renderTyping();
  renderChannels();
}

function setTypingList(channelId, userIds) {
  const users = state.typing.get(channelId) || new Map();
  users.forEach(clearTimeout);
  const next = new Map();
  for (const userId of userIds) {
    if (userId === state.me?.id) continue;
    next.set(userId, setTimeout(() => setTyping(channelId, userId, false), typingShownMs));
  }
  state.typing.set(channelId, next);
  if (channelId === state.activeId) renderTyping();
  renderChannels();
}

function renderTyping() {
  const names = [...(state.typing.get(state.activeId)?.keys() || [])].map(userName);
  $("typing").textContent = names.length === 0 ? ""
    : names.length === 1 ? `${names[0]} is typing…`
      : names.length === 2 ? `${names[0]} and ${names[1]} are typing…` : "Several people are typing…";
}

function ownTypingInput() {
  const channelId = state.activeId;
  const text = $("composer-input").value;
  drafts.set(channelId, text);
  const own = state.ownTyping;
  clearTimeout(own.idleTimer);
  if (!text.trim()) {
    stopOwnTyping();
    return;
  }
  if (own.channelId !== channelId || Date.now() - own.lastSentAt > typingRefreshMs) {
    if (own.channelId && own.channelId !== channelId) stopOwnTyping();
    own.channelId = channelId;
    own.lastSentAt = Date.now();
    state.client.request("typing.start", { channelId }).catch(() => {});
  }
  own.idleTimer = setTimeout(stopOwnTyping, typingIdleMs);
}

function stopOwnTyping() {
  const own = state.ownTyping;
  clearTimeout(own.idleTimer);
  if (own.channelId && state.client?.state === ConnectionState.open) {
    state.client.request("typing.stop", { channelId: own.channelId }).catch(() => {});
  }
  own.channelId = null;
  own.lastSentAt = 0;
}

// MARK: Sending

const drafts = new Map();

async function send(event) {
  event.preventDefault();
  const input = $("composer-input");
  const text = input.value.trim();
  const channelId = state.activeId;
  if (!text || !channelId) return;
  $("mention-suggestions").hidden = true;
  if (state.editing && !state.editing.inThread) {
    await saveEdit(text);
    return;
  }
  input.value = "";
  drafts.delete(channelId);
  autoGrow();
  // The gateway ends the typing state itself when the message is stored.
  clearTimeout(state.ownTyping.idleTimer);
  state.ownTyping.channelId = null;
  const members = state.channels.get(channelId)?.members || [];
  const pending = { channelId, text, senderId: state.me.id, clientMessageId: newClientMessageId(), createdAt: Date.now(), status: "sending",
    mentionedUserIds: mentionedIds(text, members, displayName) };
  conversation(channelId).messages.push(pending);
  renderMessages({ stickToBottom: true });
  await deliver(pending);
}

async function deliver(pending) {
  const convo = conversation(pending.channelId);
  try {
    const stored = await state.client.send(pending.channelId, pending.text, { clientMessageId: pending.clientMessageId,
      mentionedUserIds: pending.mentionedUserIds?.length ? pending.mentionedUserIds : undefined });
    const index = convo.messages.indexOf(pending);
    if (index >= 0) convo.messages.splice(index, 1);
    insertMessage(convo, stored);
    const channel = state.channels.get(pending.channelId);
    if (channel) {
      channel.lastMessage = stored;
      channel.lastActivityAt = Math.max(channel.lastActivityAt || 0, stored.createdAt);
      if ((channel.lastReadSeq || 0) < stored.seq - 1 || !state.readStateSupported) markReadSoon();
    }
    renderChannels();
    if (state.composerNotice?.channelId === pending.channelId) clearComposerNotice();
  } catch (error) {
    if (error.code === "ERR_CHANNEL_FROZEN" || error.code === "ERR_SLOW_MODE") {
      // The channel's rule, not a failure to retry: the text goes back to the composer, and
      // the notice above it says why (and, in slow mode, how long to wait).
      const index = convo.messages.indexOf(pending);
      if (index >= 0) convo.messages.splice(index, 1);
      restoreDraft(pending.channelId, pending.text);
      showComposerNotice(pending.channelId, error);
    } else {
      pending.status = "failed";
      pending.error = describeError(error).text;
      showError(error, "Sending");
    }
  }
  if (state.activeId === pending.channelId) renderMessages({ keepScroll: true });
}

/** A refused send's text, back in its channel's composer unless something new was typed there meanwhile. */
function restoreDraft(channelId, text) {
  if (state.activeId === channelId) {
    const input = $("composer-input");
    if (input.value.trim()) return;
    input.value = text;
    drafts.set(channelId, text);
    autoGrow();
  } else if (!drafts.get(channelId)) {
    drafts.set(channelId, text);
  }
}

function retrySend(message) {
  message.status = "sending";
  renderMessages({ keepScroll: true });
  deliver(message);
}

function autoGrow() {
  const input = $("composer-input");
  input.style.setProperty("height", "auto");
  input.style.setProperty("height", `${Math.min(input.scrollHeight + 2, 160)}px`);
}

// MARK: Dialogs: create, invite, members, blocked

const parseIds = (text) => [...new Set(text.split(/[\s,;]+/).map((s) => s.trim().replace(/^@/, "")).filter(Boolean))];

function dialogError(dialog, message) {
  const node = dialog.querySelector(".form-error");
  if (!node) return;
  node.hidden = !message;
  node.textContent = message || "";
}

function openDialog(id) {
  const dialog = $(id);
  dialogError(dialog, null);
  dialog.showModal();
  return dialog;
}

async function createChannel(event) {
  if (event.submitter?.value !== "ok") return;
  event.preventDefault();
  const dialog = $("create-dialog");
  const userIds = parseIds($("create-users").value).filter((id) => id !== state.me.id);
  const name = $("create-name").value.trim();
  try {
    const channel = await state.client.request("channel.create", { channelType: "group", userIds, ...(name ? { name } : {}) });
    followChannel(mergeChannel(channel));
    await loadPeople(channel.members);
    dialog.close();
    $("create-users").value = "";
    $("create-name").value = "";
    renderChannels();
    openChannel(channel.id);
  } catch (error) {
    dialogError(dialog, describeError(error).text);
  }
}

async function invite(event) {
  if (event.submitter?.value !== "ok") return;
  event.preventDefault();
  const dialog = $("invite-dialog");
  const userIds = parseIds($("invite-users").value);
  if (!userIds.length) return dialogError(dialog, "Name at least one user id.");
  try {
    const channel = await state.client.request("channel.invite", { channelId: state.activeId, userIds });
    mergeChannel(channel);
    await loadPeople(channel.members);
    dialog.close();
    $("invite-users").value = "";
    renderChannels();
    renderHeader();
    const missing = userIds.filter((id) => !channel.members.includes(id));
    if (missing.length) toast(`Not added: ${missing.join(", ")}`, { kind: "error" });
  } catch (error) {
    dialogError(dialog, describeError(error).text);
  }
}

/**
 * The members dialog: each member with their role and tags; Block / Unblock; for the channel's
 * owners and moderators, Ban, Shadow ban (each clicked twice) or Unban as their role allows;
 * for its owners, Make / Remove moderator.
 */
function renderMembers() {
  const channel = state.channels.get(state.activeId);
  if (!channel) return;
  const iOwn = roleOf(channel, state.me.id) === "owner";
  $("member-list").replaceChildren(...channel.members.map((id) => {
    const isMe = id === state.me.id;
    const blocked = state.blocked.has(id);
    const presence = state.presence.get(id);
    const role = roleOf(channel, id);
    const name = userName(id);
    // A ban on someone still in the channel is a shadow ban (a plain one takes them out).
    const ban = channel.bans?.[id];
    const actions = [];
    if (!isMe && iOwn && role !== "owner") {
      const promote = role === "member";
      actions.push(el("button", { type: "button", class: "ghost small", dataset: { action: promote ? "make-moderator" : "unmake-moderator", user: id },
        "aria-label": promote ? `Make ${name} a moderator` : `Make ${name} a member again`,
        onclick: () => setRole(channel.id, id, promote ? "moderator" : "member") }, promote ? "Make moderator" : "Remove moderator"));
    }
    if (mayBan(channel, id)) {
      if (ban) {
        actions.push(el("button", { type: "button", class: "ghost small", dataset: { action: "unban", user: id }, "aria-label": `Lift ${name}'s ban`,
          onclick: () => unban(channel.id, id) }, "Unban"));
      } else {
        for (const shadow of [false, true]) {
          const confirming = state.confirmingBan === `${channel.id}/${id}/${shadow}`;
          const label = shadow ? "Shadow ban" : "Ban";
          actions.push(el("button", {
            type: "button", class: `ghost small${confirming ? " confirm" : ""}`, dataset: { action: shadow ? "shadow-ban" : "ban", user: id },
            "aria-label": confirming ? `Click again to ${label.toLowerCase()} ${name}`
              : shadow ? `Shadow ban ${name}: what they send reaches only them` : `Ban ${name} from the channel`,
            onclick: () => banClicked(channel.id, id, shadow),
          }, confirming ? `${label}?` : label));
        }
      }
    }
    if (!isMe) {
      actions.push(el("button", { type: "button", class: blocked ? "ghost small" : "danger small", dataset: { action: blocked ? "unblock" : "block", user: id },
        "aria-label": blocked ? `Unblock ${name}` : `Block ${name}`, onclick: () => setBlocked(id, !blocked) }, blocked ? "Unblock" : "Block"));
    }
    return el("li", { class: "member", dataset: { user: id, role } },
      avatar(name, { seed: id, small: true, presenceOf: isMe ? null : id }),
      el("span", { class: "who" }, el("strong", {}, isMe ? `${state.me.name || id} (you)` : name),
        el("span", {}, isMe ? id : `${id} · ${presence?.online ? "online" : "offline"}`)),
      role !== "member" ? el("span", { class: "tag role", dataset: { role } }, role === "owner" ? "Owner" : "Moderator") : null,
      ban ? el("span", { class: "tag shadow", title: "What they send reaches only them" }, "Shadow banned") : null,
      blocked ? el("span", { class: "tag" }, "Blocked") : null,
      actions.length ? el("span", { class: "member-actions" }, actions) : null);
  }));
}

async function setBlocked(userId, blocked) {
  try {
    const result = await state.client.request(blocked ? "user.block" : "user.unblock", { userIds: [userId] });
    const outcome = result.results?.[userId];
    if (outcome !== "success") throw { code: outcome || "ERR_INTERNAL" };
    if (blocked) state.blocked.add(userId);
    else state.blocked.delete(userId);
    toast(blocked ? `Blocked ${userName(userId)}. They are not told.` : `Unblocked ${userName(userId)}.`);
    refreshBlockViews();
  } catch (error) {
    showError(error, blocked ? "Blocking" : "Unblocking");
  }
}

let blockedNext = null;

async function loadBlocked(fromStart) {
  const list = $("blocked-list");
  try {
    const page = await state.client.request("user.blocked.list", { direction: "byMe", limit: 50, ...(fromStart || !blockedNext ? {} : { cursor: blockedNext }) });
    blockedNext = page.next;
    const rows = page.users.map((user) => el("li", { dataset: { user: user.id } },
      avatar(user.name || user.id, { seed: user.id, small: true }),
      el("span", { class: "who" }, el("strong", {}, user.name || user.id), el("span", {}, user.id)),
      el("button", { type: "button", class: "ghost small", dataset: { action: "unblock", user: user.id }, onclick: () => setBlocked(user.id, false) }, "Unblock")));
    if (fromStart) list.replaceChildren(...rows);
    else list.append(...rows);
    if (!list.children.length) list.replaceChildren(el("li", { class: "empty" }, "You have not blocked anyone."));
    $("blocked-more").hidden = !blockedNext;
  } catch (error) {
    dialogError($("blocked-dialog"), describeError(error).text);
  }
}

// MARK: Moderation (§16)

/** `userId`'s role in `channel`: "owner", "moderator" or "member" (a gateway without roles names none). */
const roleOf = (channel, userId) => channel?.roles?.[userId] || "member";

/** Whether `userId` (by default the signed-in user) owns or moderates `channel`. */
const moderates = (channel, userId = state.me?.id) => roleOf(channel, userId) !== "member";

/** Whether the signed-in user may ban or unban `userId` here: owners anyone but owners, moderators members only. */
function mayBan(channel, userId) {
  if (!channel || userId === state.me.id) return false;
  const mine = roleOf(channel, state.me.id);
  const theirs = roleOf(channel, userId);
  return mine === "owner" ? theirs !== "owner" : mine === "moderator" && theirs === "member";
}

function formatSeconds(seconds) {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** The header's chips for a frozen channel and slow mode, the Moderate button, the composer's hint. */
function renderModes(channel) {
  const chips = [];
  if (channel.frozen) {
    chips.push(el("span", { class: "mode-chip", dataset: { mode: "frozen" }, title: "Only owners and moderators can send" }, "Frozen"));
  }
  if (channel.slowModeSeconds > 0) {
    chips.push(el("span", { class: "mode-chip", dataset: { mode: "slow" }, title: `Members send at most one message per ${formatSeconds(channel.slowModeSeconds)}` },
      `Slow mode · ${formatSeconds(channel.slowModeSeconds)}`));
  }
  $("channel-modes").replaceChildren(...chips);
  $("open-moderation").hidden = !moderates(channel);
  $("composer-input").placeholder = channel.frozen && !moderates(channel)
    ? "Frozen: only owners and moderators can send" : "Write a message (@name mentions a member)";
  renderComposerNotice();
}

/** Redraws the open members and moderation dialogs after the channel changed. */
function refreshModerationViews() {
  if ($("members-dialog").open) renderMembers();
  if ($("moderation-dialog").open) renderModeration();
}

/** The channel as the gateway has it now (after a ban or unban, whose answer is `{}`). */
async function refreshChannel(channelId) {
  try {
    mergeChannel(await state.client.channel(channelId));
  } catch (error) {
    showError(error, "Reading the channel");
    return;
  }
  renderChannels();
  if (state.activeId === channelId) renderHeader();
  refreshModerationViews();
}

async function setRole(channelId, userId, role) {
  try {
    mergeChannel(await state.client.setRole(channelId, userId, role));
    toast(role === "moderator" ? `${userName(userId)} is a moderator now.` : `${userName(userId)} is a member again.`);
  } catch (error) {
    showError(error, "Changing the role");
  }
  if (state.activeId === channelId) renderHeader();
  refreshModerationViews();
}

/** A first click on Ban or Shadow ban asks again (for a few seconds); the second bans. */
async function banClicked(channelId, userId, shadow) {
  const key = `${channelId}/${userId}/${shadow}`;
  if (state.confirmingBan !== key) {
    state.confirmingBan = key;
    renderMembers();
    setTimeout(() => {
      if (state.confirmingBan !== key) return;
      state.confirmingBan = null;
      refreshModerationViews();
    }, 4000);
    return;
  }
  state.confirmingBan = null;
  try {
    await state.client.ban(channelId, userId, { shadow });
    toast(shadow ? `Shadow banned ${userName(userId)}: what they send now reaches only them. They are not told.`
      : `Banned ${userName(userId)} from the channel.`);
  } catch (error) {
    showError(error, shadow ? "Shadow banning" : "Banning");
  }
  await refreshChannel(channelId);
}

async function unban(channelId, userId) {
  try {
    await state.client.unban(channelId, userId);
    toast(`Lifted ${userName(userId)}'s ban.`);
  } catch (error) {
    showError(error, "Lifting the ban");
  }
  await refreshChannel(channelId);
}

/** The Moderate dialog: the freeze switch, the slow-mode choice and the channel's bans. */
function renderModeration() {
  const dialog = $("moderation-dialog");
  const channel = state.channels.get(state.activeId);
  if (!channel || !moderates(channel)) {
    if (dialog.open) dialog.close();
    return;
  }
  $("moderation-channel").textContent = channelTitle(channel);
  $("freeze-toggle").setAttribute("aria-checked", String(Boolean(channel.frozen)));
  const current = channel.slowModeSeconds || 0;
  const choices = [...new Set([...slowModeChoices, current])].sort((a, b) => a - b);
  $("slow-mode").replaceChildren(...choices.map((seconds) => el("option", { value: String(seconds), selected: seconds === current },
    seconds ? `One message per ${formatSeconds(seconds)}` : "Off")));
  const bans = Object.entries(channel.bans || {}).sort(([a], [b]) => a.localeCompare(b));
  $("ban-list").replaceChildren(...(bans.length ? bans.map(([id, ban]) => el("li", { dataset: { user: id, shadow: String(ban.shadow) } },
    avatar(userName(id), { seed: id, small: true }),
    el("span", { class: "who" }, el("strong", {}, userName(id)),
      el("span", {}, `${ban.shadow ? "Shadow ban" : "Ban"} · ${ban.untilMs ? `until ${new Date(ban.untilMs).toLocaleString()}` : "until lifted"}`)),
    mayBan(channel, id) ? el("button", { type: "button", class: "ghost small", dataset: { action: "unban", user: id }, "aria-label": `Lift ${userName(id)}'s ban`,
      onclick: () => unban(channel.id, id) }, "Unban") : null))
    : [el("li", { class: "empty" }, "Nobody is banned here.")]));
}

/** A channel.update of the moderation dialog (`frozen` or `slowModeSeconds`). */
async function updateModeration(change, describe) {
  const channelId = state.activeId;
  const dialog = $("moderation-dialog");
  dialogError(dialog, null);
  try {
    mergeChannel(await state.client.updateChannel(channelId, change));
    toast(describe);
  } catch (error) {
    dialogError(dialog, describeError(error).text);
  }
  if (state.activeId === channelId) renderHeader();
  refreshModerationViews();
}

/** Why the last send in `channelId` was refused by its moderation, shown above its composer. */
function showComposerNotice(channelId, error) {
  state.composerNotice = { channelId, code: error.code,
    until: error.code === "ERR_SLOW_MODE" ? Date.now() + (error.retryAfterMs || 1000) : null };
  const live = $("composer-notice-live");
  live.textContent = describeError(error).text; // told once to screen readers; the countdown is not
  renderComposerNotice();
}

function clearComposerNotice() {
  state.composerNotice = null;
  $("composer-notice-live").textContent = "";
  renderComposerNotice();
}

let composerNoticeTimer = null;

/**
 * The notice of the open channel, if any. A slow mode's wait counts down and ends it, and so
 * does slow mode turned off; an unfreeze ends a freeze's.
 */
function renderComposerNotice() {
  clearTimeout(composerNoticeTimer);
  const notice = state.composerNotice;
  const channel = notice && state.channels.get(notice.channelId);
  const over = notice && (notice.code === "ERR_SLOW_MODE"
    ? notice.until <= Date.now() || (channel && !channel.slowModeSeconds)
    : channel && !channel.frozen);
  if (over) {
    clearComposerNotice();
    return;
  }
  const shown = notice && notice.channelId === state.activeId ? notice : null;
  $("composer-notice").hidden = !shown;
  if (!shown) return;
  $("composer-notice").dataset.code = shown.code;
  $("composer-notice-text").textContent = shown.until
    ? `Slow mode: you can send again in ${Math.ceil((shown.until - Date.now()) / 1000)} s`
    : describeError({ code: shown.code }).text;
  if (shown.until) composerNoticeTimer = setTimeout(renderComposerNotice, Math.min(250, shown.until - Date.now()));
}

/** The report dialog for `message`, with an optional reason. */
function openFlag(message) {
  state.flagging = message;
  $("flag-quote").textContent = `${userName(message.senderId)}: ${message.text}`;
  $("flag-reason").value = "";
  openDialog("flag-dialog");
  $("flag-reason").focus();
}

async function submitFlag(event) {
  if (event.submitter?.value !== "ok") return;
  event.preventDefault();
  const dialog = $("flag-dialog");
  const message = state.flagging;
  const reason = $("flag-reason").value.trim();
  if (!message) return dialog.close();
  try {
    await state.client.flagMessage(message.channelId, message.seq, reason ? { reason } : {});
    dialog.close();
    state.flagging = null;
    toast("Reported to the app's moderators.");
  } catch (error) {
    dialogError(dialog, describeError(error).text);
  }
}

// MARK: Wiring the page

function setUp() {
  $("dev-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const userId = $("dev-user").value.trim();
    if (userId) signIn({ kind: "dev", userId });
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (token) signIn({ kind: "token", token });
  });
  $("sign-out").addEventListener("click", signOut);
  $("back").addEventListener("click", closeChannel);
  $("composer").addEventListener("submit", send);
  const input = $("composer-input");
  input.addEventListener("input", () => {
    autoGrow();
    if (!state.editing || state.editing.inThread) ownTypingInput();
    suggestMentions();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    } else if (event.key === "Escape" && state.editing && !state.editing.inThread) {
      cancelEditing();
    }
  });
  input.addEventListener("blur", () => setTimeout(() => { $("mention-suggestions").hidden = true; }, 150));
  $("edit-cancel").addEventListener("click", cancelEditing);
  picker = new ReactionPicker($("reaction-picker"));
  $("thread-composer").addEventListener("submit", sendThreadReply);
  $("thread-close").addEventListener("click", closeThread);
  $("thread-back").addEventListener("click", closeThread);
  const threadInput = $("thread-input");
  threadInput.addEventListener("input", () => {
    if (state.thread && !state.editing?.inThread) threadDrafts.set(`${state.thread.channelId}/${state.thread.parentSeq}`, threadInput.value);
  });
  threadInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("thread-composer").requestSubmit();
    } else if (event.key === "Escape" && state.editing?.inThread) {
      cancelEditing();
    }
  });
  input.addEventListener("blur", () => { if (!input.value.trim()) stopOwnTyping(); });
  $("load-earlier").addEventListener("click", loadEarlier);
  $("messages").addEventListener("scroll", () => { if ($("messages").scrollTop < 40) loadEarlier(); });
  $("open-create").addEventListener("click", () => { openDialog("create-dialog"); $("create-users").focus(); });
  $("create-form").addEventListener("submit", createChannel);
  $("open-invite").addEventListener("click", () => {
    $("invite-channel").textContent = channelTitle(state.channels.get(state.activeId));
    openDialog("invite-dialog");
    $("invite-users").focus();
  });
  $("invite-form").addEventListener("submit", invite);
  $("open-members").addEventListener("click", () => { renderMembers(); openDialog("members-dialog"); });
  $("open-moderation").addEventListener("click", () => { renderModeration(); openDialog("moderation-dialog"); });
  $("freeze-toggle").addEventListener("click", () => {
    const frozen = !state.channels.get(state.activeId)?.frozen;
    updateModeration({ frozen }, frozen ? "Channel frozen: only owners and moderators can send." : "Channel unfrozen.");
  });
  $("slow-mode").addEventListener("change", (event) => {
    const seconds = Number(event.target.value);
    updateModeration({ slowModeSeconds: seconds }, seconds ? `Slow mode: one message per ${formatSeconds(seconds)}.` : "Slow mode off.");
  });
  $("flag-form").addEventListener("submit", submitFlag);
  $("flag-reason").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      $("flag-form").querySelector("button[value=ok]").click();
    }
  });
  $("composer-notice-close").addEventListener("click", clearComposerNotice);
  $("open-blocked").addEventListener("click", () => { openDialog("blocked-dialog"); loadBlocked(true); });
  $("blocked-more").addEventListener("click", () => loadBlocked(false));
  $("block-submit").addEventListener("click", async () => {
    const ids = parseIds($("block-user").value);
    if (!ids.length) return;
    for (const id of ids) await setBlocked(id, true);
    $("block-user").value = "";
  });
  $("block-user").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      $("block-submit").click();
    }
  });
  document.addEventListener("visibilitychange", () => {
    if (pageIsVisible()) {
      markReadSoon();
      renderChannels();
    }
  });
  window.addEventListener("online", () => state.client?.reconnectNow());
  window.addEventListener("pagehide", stopOwnTyping);
  startSignIn();
}

setUp();
