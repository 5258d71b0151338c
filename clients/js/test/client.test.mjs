// The client's rules one by one: the feed's exactly-once logic (sans-IO), the backoff, and,
// against live gateways, tokens (refused, expiring), a deactivated user, rate limits,
// events per channel and typed requests.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ChannelFeed, ChatClient, ChatError, ConnectionState, reconnectDelay } from "../chat-client.js";
import { freePort, LiveGateway, waitFor, within } from "../test-support/live-gateway.mjs";
import { collect } from "../test-support/streams.mjs";

const message = (seq) => ({ id: `m${seq}`, channelId: "c", seq, senderId: "bob", text: `t${seq}` });
const seqs = (items) => items.map((item) => item.message.seq);

describe("ChannelFeed before v1.2 (no versions: history reads)", () => {
  test("delivers in order, reads history on a gap and holds live messages while it reads", () => {
    const feed = new ChannelFeed(0);
    assert.deepEqual(seqs(feed.received(message(1)).deliver), [1]);
    assert.deepEqual(feed.received(message(1)).deliver, [], "a duplicate is dropped");
    const gap = feed.received(message(4));
    assert.deepEqual(gap, { deliver: [], action: { readHistoryAfterSeq: 1 } });
    assert.deepEqual(feed.received(message(5)), { deliver: [], action: null }, "held while reading");
    const page = feed.historyRead([message(2), message(3), message(4)], false);
    assert.deepEqual(seqs(page.deliver), [2, 3, 4, 5]);
    assert.equal(page.action, null);
  });

  test("what history does not return below a held message is hidden, not lost", () => {
    const feed = new ChannelFeed(0);
    feed.received(message(3)); // 1 and 2 hidden from this user
    assert.deepEqual(seqs(feed.historyRead([], false).deliver), [3]);
    assert.deepEqual(seqs(feed.received(message(4)).deliver), [4]);
  });

  test("pages on while history has more; a failed read starts again on catch-up", () => {
    const feed = new ChannelFeed(10);
    assert.deepEqual(feed.catchUp(), { readHistoryAfterSeq: 10 });
    assert.equal(feed.catchUp(), null, "one read at a time");
    const first = feed.historyRead([message(11), message(12)], true);
    assert.deepEqual(first.action, { readHistoryAfterSeq: 12 });
    feed.historyFailed();
    assert.deepEqual(feed.catchUp(), { readHistoryAfterSeq: 12 });
    assert.deepEqual(seqs(feed.historyRead([message(12), message(13)], false).deliver), [13]);
  });
});

test("reconnect delays double from the base up to the maximum, with jitter between half and all", () => {
  const backoff = { baseMs: 250, maxMs: 30000 };
  assert.equal(reconnectDelay(1, 1, backoff), 250);
  assert.equal(reconnectDelay(1, 0, backoff), 125);
  assert.equal(reconnectDelay(3, 1, backoff), 1000);
  assert.equal(reconnectDelay(20, 1, backoff), 30000);
  assert.equal(reconnectDelay(20, 0, backoff), 15000);
});

describe("against a live gateway", () => {
  let gateway;
  const clients = [];
  const client = (user, options = {}) => {
    const made = new ChatClient({ url: gateway.url, token: () => gateway.token(user), backoff: { baseMs: 20, maxMs: 200 }, ...options });
    clients.push(made);
    return made;
  };

  before(async () => {
    gateway = await LiveGateway.start();
    for (const id of ["alice", "bob", "carol"]) await gateway.createUser(id, id.toUpperCase());
  });

  after(async () => {
    for (const made of clients) made.close();
    await gateway?.dispose();
  });

  test("a refused token is asked for again; an unreachable gateway rejects connect()", { timeout: 20000 }, async () => {
    let calls = 0;
    const carol = client("carol", { token: async () => (++calls === 1 ? "not-a-token" : gateway.token("carol")) });
    await within(10000, "carol connects", carol.connect());
    assert.equal(calls, 2);
    assert.equal((await carol.me()).user.id, "carol");
    carol.close();
    const nowhere = new ChatClient({ url: `ws://127.0.0.1:${await freePort()}/v1/ws`, token: () => "t" });
    await assert.rejects(within(10000, "connect to nowhere", nowhere.connect()), { name: "ChatError", code: "ERR_CONNECT_FAILED" });
    assert.equal(nowhere.state, ConnectionState.closed);
    await assert.rejects(nowhere.me(), { code: "ERR_NOT_CONNECTED" });
  });

  test("session.expiring makes the client ask for a fresh token for its next connection", { timeout: 20000 }, async () => {
    let calls = 0;
    const shortLived = async () => {
      calls += 1;
      const { body } = await gateway.admin("POST", "/v1/admin/tokens", { userId: "carol", ttlSeconds: 2 });
      return body.token;
    };
    const carol = client("carol", { token: shortLived });
    const expiring = new Promise((resolve) => carol.on("session.expiring", resolve));
    await within(10000, "carol connects", carol.connect());
    assert.ok((await within(5000, "session.expiring", expiring)).expiresAt > 0);
    // At exp the gateway closes with 4001; the client comes back with a fresh token.
    await waitFor("a second token and an open connection", () => calls >= 2 && carol.state === ConnectionState.open, { timeoutMs: 10000 });
    assert.equal((await carol.me()).user.id, "carol");
    carol.close();
  });

  test("close 4002 (deactivated) ends the client, its streams and its requests", { timeout: 20000 }, async () => {
    await gateway.createUser("dave");
    const dave = client("dave");
    await within(10000, "dave connects", dave.connect());
    const channel = await dave.createChannel({ userIds: [], name: "dave's" });
    const stream = dave.messages(channel.id, { afterSeq: 0 });
    // Nothing in flight: with permessage-deflate, a request answered while the gateway closes
    // can reach Node's WebSocket behind the close frame, and it reports 1006 instead of 4002.
    await waitFor("dave's catch-up read answered", () => dave.requests.size === 0, { timeoutMs: 5000 });
    const closed = new Promise((resolve) => dave.on("state", (change) => change.state === ConnectionState.closed && resolve(change)));
    assert.equal((await gateway.admin("POST", "/v1/admin/users/dave/deactivate")).status, 200);
    const change = await within(5000, "dave's client closes", closed);
    assert.equal(change.closeCode, 4002);
    assert.equal(change.final, true);
    assert.deepEqual(await within(2000, "the stream ends", stream.next()), { value: undefined, done: true });
    await assert.rejects(dave.me(), { code: "ERR_NOT_CONNECTED" });
  });

  test("events: all of them, by name and per channel; typed requests answer with the protocol's results", { timeout: 20000 }, async () => {
    const alice = client("alice");
    const bob = client("bob");
    await within(10000, "connects", Promise.all([alice.connect(), bob.connect()]));
    const chat = await alice.createChannel({ userIds: ["bob"], name: "events", distinct: true });
    assert.equal(chat.isOneToOne, true);
    const other = await alice.createChannel({ userIds: ["bob"], name: "other" });
    const all = [];
    const inChat = [];
    bob.on("*", (event) => all.push(event));
    bob.onChannel(chat.id, (event) => inChat.push(event));
    const typing = new Promise((resolve) => bob.on("typing.start", resolve));
    await alice.startTyping(chat.id);
    assert.deepEqual(await within(5000, "typing.start", typing), { channelId: chat.id, userId: "alice" });
    await alice.send(other.id, "elsewhere");
    const sent = await alice.send(chat.id, "hello", { data: { kind: "greeting" } });
    assert.deepEqual(sent.data, { kind: "greeting" });
    await waitFor("bob's events", () => inChat.some((e) => e.event === "message.new"), { timeoutMs: 5000 });
    assert.ok(all.some((e) => e.event === "message.new" && e.data.channelId === other.id));
    assert.ok(inChat.every((e) => (e.data.channelId ?? e.data.id) === chat.id), JSON.stringify(inChat));
    // (channel.updated from the create may come before or after the listeners were added.)
    assert.deepEqual(inChat.map((e) => e.event).filter((name) => name === "typing.start" || name === "message.new"),
      ["typing.start", "message.new"]);

    const read = await bob.markRead(chat.id, sent.seq);
    assert.deepEqual(read, { channelId: chat.id, lastReadSeq: sent.seq, unreadCount: 0 });
    const { channels } = await bob.channels({ limit: 10 });
    assert.deepEqual(channels.map((c) => c.id).sort(), [chat.id, other.id].sort());
    assert.equal((await bob.user("alice")).name, "ALICE");
    assert.equal((await bob.users({ userIds: ["alice", "carol"] })).users.length, 2);
    assert.equal((await bob.updateMe({ name: "Bobby" })).name, "Bobby");
    assert.deepEqual((await bob.history(chat.id, { limit: 10 })).messages.map((m) => m.text), ["hello"]);
    const presence = await bob.subscribePresence(["alice"]);
    assert.deepEqual(presence.map((p) => [p.userId, p.online]), [["alice", true]]);
    await bob.unsubscribePresence(["alice"]);
    await assert.rejects(bob.channel("c_nope"), (error) => error instanceof ChatError && error.code === "ERR_CHANNEL_NOT_FOUND");
    await assert.rejects(bob.request("no.such.type"), { code: "ERR_UNKNOWN_TYPE" });

    // messages() without afterSeq starts after the newest message now.
    const fromNow = bob.messages(chat.id);
    await fromNow.ready;
    await alice.send(chat.id, "after");
    assert.deepEqual((await collect(fromNow, 1, { timeoutMs: 5000 })).map((m) => m.text), ["after"]);
    fromNow.close();
  });
});

test("ERR_RATE_LIMITED carries retryAfterMs; retryRateLimited waits it out and sends again", { timeout: 30000 }, async () => {
  const gateway = await LiveGateway.start({ LIMITS_USERMESSAGESPERSECOND: "2", LIMITS_USERMESSAGEBURST: "1" });
  const alice = new ChatClient({ url: gateway.url, token: () => gateway.token("alice") });
  try {
    await within(10000, "alice connects", alice.connect());
    const channel = await alice.createChannel({ userIds: [], name: "rates" });
    await alice.send(channel.id, "first");
    const refused = await alice.send(channel.id, "too soon").catch((error) => error);
    assert.equal(refused.code, "ERR_RATE_LIMITED");
    assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 1000, `retryAfterMs ${refused.retryAfterMs}`);
    const started = Date.now();
    const sent = await within(10000, "rate-limited sends", Promise.all(
      ["a", "b", "c"].map((text) => alice.send(channel.id, text, { retryRateLimited: true }))));
    assert.deepEqual(sent.map((m) => m.text), ["a", "b", "c"]);
    assert.ok(Date.now() - started >= 900, "three sends at 2/s, burst 1, take about a second");
    const stored = (await alice.history(channel.id, { afterSeq: 0 })).messages;
    assert.deepEqual(stored.map((m) => m.text).sort(), ["a", "b", "c", "first"]);
  } finally {
    alice.close();
    await gateway.dispose();
  }
});
