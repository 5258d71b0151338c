// The message lifecycle (PROTOCOL.md §15) through the JS SDK against the release gateway:
// each new call answers as the protocol says and the other member hears each change as its
// event; a followed channel's stream gets what it missed while cut off, each change once; a
// block keeps a blocked user's reaction out of the blocker's counts; changes have their own
// rate. The JS twin of Tests/ChatClientTests/ChatClientLifecycleTests.swift.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ChatClient } from "../chat-client.js";
import { LiveGateway, waitFor, within } from "../test-support/live-gateway.mjs";
import { collectItems, nothingMoreWithin } from "../test-support/streams.mjs";

let gateway;
const clients = [];

before(async () => {
  gateway = await LiveGateway.start({ LIMITS_USERCHANGESPERSECOND: "0" });
  for (const id of ["alice", "bob"]) await gateway.createUser(id);
});

after(async () => {
  for (const client of clients) client.close();
  await gateway?.dispose();
});

function client(user, options = {}) {
  const made = new ChatClient({ url: gateway.url, token: () => gateway.token(user), backoff: { baseMs: 20, maxMs: 200 }, ...options });
  clients.push(made);
  return made;
}

/** Resolves with the first `name` event whose data `match` accepts (rejects after `timeoutMs`). */
function nextEvent(chatClient, name, match = () => true, timeoutMs = 10000) {
  return within(timeoutMs, `a ${name} event`, new Promise((resolve) => {
    const stop = chatClient.on(name, (data) => {
      if (!match(data)) return;
      stop();
      resolve(data);
    });
  }));
}

/** The §11 code a call rejects with (null: it resolved). */
async function codeOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error.code;
  }
}

const summary = (items) => items.map((item) => `${item.type} ${item.message?.seq ?? item.reaction?.seq}`);

test("each call answers as the protocol says and the other member hears each change", { timeout: 60000 }, async () => {
  const alice = client("alice");
  const bob = client("bob");
  await within(10000, "connects", Promise.all([alice.connect(), bob.connect()]));
  const channel = await alice.createChannel({ userIds: ["bob"], name: "lifecycle" });

  const first = await alice.send(channel.id, "hello @bob", { mentionedUserIds: ["bob", "nobody"] });
  assert.deepEqual(first.mentionedUserIds, ["bob"], "a non-member is dropped");
  assert.equal(first.parentSeq, null);
  assert.ok(first.version > 0);
  const many = Array.from({ length: 26 }, (_, i) => `u${i}`);
  assert.equal(await codeOf(alice.send(channel.id, "many", { mentionedUserIds: many })), "ERR_TOO_MANY_IDS");

  const aliceHearsReaction = nextEvent(alice, "reaction.added", (data) => data.channelId === channel.id);
  const reacted = await bob.addReaction(channel.id, first.seq, "👍");
  assert.deepEqual([reacted.reactions, reacted.ownReactions], [{ "👍": 1 }, ["👍"]]);
  assert.deepEqual(await aliceHearsReaction, { channelId: channel.id, seq: first.seq, userId: "bob", kind: "👍", reactions: { "👍": 1 } });
  assert.deepEqual((await bob.addReaction(channel.id, first.seq, "👍")).reactions, { "👍": 1 }, "again: a no-op");
  assert.equal(await codeOf(bob.addReaction(channel.id, first.seq, "")), "ERR_BAD_REQUEST");
  assert.equal(await codeOf(bob.addReaction(channel.id, first.seq, "x".repeat(65))), "ERR_BAD_REQUEST");
  const aliceHearsRemoval = nextEvent(alice, "reaction.removed", (data) => data.channelId === channel.id);
  assert.deepEqual((await bob.removeReaction(channel.id, first.seq, "👍")).ownReactions, []);
  assert.equal((await aliceHearsRemoval).userId, "bob");

  const bobHearsEdit = nextEvent(bob, "message.updated", (data) => data.change === "edit");
  const edited = await alice.updateMessage(channel.id, first.seq, { text: "hello, bob", mentionedUserIds: [] });
  assert.equal(edited.seq, first.seq);
  assert.equal(edited.createdAt, first.createdAt);
  assert.ok(edited.editedAt);
  assert.deepEqual(edited.mentionedUserIds, []);
  assert.equal((await bobHearsEdit).message.text, "hello, bob");
  assert.equal(await codeOf(bob.updateMessage(channel.id, first.seq, { text: "mine now" })), "ERR_FORBIDDEN");
  assert.equal(await codeOf(alice.updateMessage(channel.id, 9999, { text: "?" })), "ERR_MESSAGE_NOT_FOUND");

  const aliceHearsReply = nextEvent(alice, "message.updated", (data) => data.change === "reply");
  const reply = await bob.send(channel.id, "a reply", { parentSeq: first.seq });
  assert.equal(reply.parentSeq, first.seq);
  const parent = (await aliceHearsReply).message;
  assert.deepEqual([parent.seq, parent.replyCount, parent.version], [first.seq, 1, reply.version]);
  assert.equal(await codeOf(alice.send(channel.id, "deeper", { parentSeq: reply.seq })), "ERR_BAD_REQUEST");
  assert.deepEqual((await alice.thread(channel.id, first.seq)).messages.map((m) => m.seq), [reply.seq]);
  assert.deepEqual((await alice.history(channel.id, { afterSeq: 0 })).messages.map((m) => [m.seq, m.parentSeq]),
    [[first.seq, null], [reply.seq, first.seq]]);

  const bobHearsDelete = nextEvent(bob, "message.updated", (data) => data.change === "delete");
  const tombstone = await alice.deleteMessage(channel.id, first.seq);
  assert.ok(tombstone.deletedAt);
  assert.deepEqual([tombstone.text, tombstone.data, tombstone.reactions, tombstone.mentionedUserIds], ["", null, {}, []]);
  assert.ok((await bobHearsDelete).message.deletedAt);
  assert.deepEqual(await alice.deleteMessage(channel.id, first.seq), tombstone, "deleting again answers the tombstone");
  assert.equal(await codeOf(alice.updateMessage(channel.id, first.seq, { text: "back" })), "ERR_MESSAGE_DELETED");
  assert.equal(await codeOf(bob.addReaction(channel.id, first.seq, "👍")), "ERR_MESSAGE_DELETED");

  const { version: now } = await bob.channel(channel.id);
  const changes = await bob.changes(channel.id, 0, { pageSize: 1 });
  assert.equal(changes.version, now);
  assert.deepEqual(changes.messages.map((m) => m.seq).sort((a, b) => a - b), [first.seq, reply.seq], "each message once");
  assert.ok(changes.messages.find((m) => m.seq === first.seq).deletedAt);
  const none = await bob.changesPage(channel.id, now);
  assert.deepEqual(none, { messages: [], version: now, next: null });
});

test("a stream cut off gets the edits, deletes, reactions and messages it missed, each once", { timeout: 60000 }, async () => {
  // bob's WebSocket can stop delivering (a network that goes quiet) and then be cut.
  let stalled = false;
  const sockets = new Set();
  class StallableWebSocket extends globalThis.WebSocket {
    constructor(...args) {
      super(...args);
      sockets.add(this);
    }

    set onmessage(handler) {
      super.onmessage = handler ? (event) => { if (!stalled) handler(event); } : null;
    }

    get onmessage() {
      return super.onmessage;
    }
  }
  const alice = client("alice");
  const bob = client("bob", { WebSocket: StallableWebSocket });
  await within(10000, "connects", Promise.all([alice.connect(), bob.connect()]));
  const channel = await alice.createChannel({ userIds: ["bob"], name: "away" });
  const one = await alice.send(channel.id, "one");
  const two = await alice.send(channel.id, "two");
  const stream = bob.messages(channel.id, { afterSeq: 0 });
  assert.deepEqual((await collectItems(stream, 2, { timeoutMs: 10000 })).map((i) => i.message.text), ["one", "two"]);
  await alice.updateMessage(channel.id, one.seq, { text: "one, live" });
  const [live] = await collectItems(stream, 1, { timeoutMs: 10000 });
  assert.deepEqual([live.type, live.message.text], ["updated", "one, live"]);

  stalled = true;
  await alice.updateMessage(channel.id, one.seq, { text: "one, fixed" });
  await alice.deleteMessage(channel.id, two.seq);
  await alice.addReaction(channel.id, one.seq, "🎉");
  const three = await alice.send(channel.id, "three");
  const four = await alice.send(channel.id, "four, in one's thread", { parentSeq: one.seq });
  const reconnected = new Promise((resolve) => bob.on("open", ({ reconnected: again }) => again && resolve()));
  stalled = false;
  for (const socket of sockets) socket.close(3000, "cut by the test");
  await within(10000, "bob reconnects", reconnected);

  const caught = await collectItems(stream, 4, { timeoutMs: 20000 });
  assert.deepEqual(summary(caught), [`updated ${two.seq}`, `updated ${one.seq}`, `new ${three.seq}`, `new ${four.seq}`]);
  const latestOne = caught[1].message;
  assert.deepEqual([latestOne.text, latestOne.reactions, latestOne.replyCount, latestOne.ownReactions], ["one, fixed", { "🎉": 1 }, 1, []]);
  assert.ok(caught[0].message.deletedAt);
  assert.equal(caught[3].message.parentSeq, one.seq);
  assert.deepEqual(await nothingMoreWithin(stream, 1000), [], "each change once");
  await alice.updateMessage(channel.id, three.seq, { text: "three, edited" });
  const [after] = await collectItems(stream, 1, { timeoutMs: 10000 });
  assert.equal(after.message.text, "three, edited");
  stream.close();
});

test("a blocked user's reaction is missing from the blocker's counts in a 1-to-1 (and the blocked user's own view counts it)", { timeout: 30000 }, async () => {
  await gateway.createUser("carol");
  await gateway.createUser("dave");
  const carol = client("carol");
  const dave = client("dave");
  await within(10000, "connects", Promise.all([carol.connect(), dave.connect()]));
  const channel = await carol.createChannel({ userIds: ["dave"], name: "one to one" });
  assert.equal(channel.isOneToOne, true);
  const message = await carol.send(channel.id, "hi");
  assert.equal((await carol.block(["dave"])).dave, "success");
  const heard = [];
  carol.on("reaction.added", (data) => heard.push(data));
  const davesView = await dave.addReaction(channel.id, message.seq, "👍");
  assert.deepEqual(davesView.reactions, { "👍": 1 }, "dave is not told: his view counts it");
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.deepEqual(heard, [], "no reaction.added from dave reaches carol");
  assert.deepEqual((await carol.history(channel.id, { afterSeq: 0 })).messages[0].reactions, {});
  assert.deepEqual((await carol.changes(channel.id, 0)).messages[0].reactions, {});
  await carol.unblock(["dave"]);
  assert.deepEqual((await carol.history(channel.id, { afterSeq: 0 })).messages[0].reactions, { "👍": 1 }, "counted again after the unblock");
});

test("edits, deletes and reactions have their own rate, which retryRateLimited waits out", { timeout: 30000 }, async () => {
  const limited = await LiveGateway.start({ LIMITS_USERCHANGESPERSECOND: "2", LIMITS_USERCHANGEBURST: "1" });
  const alice = new ChatClient({ url: limited.url, token: () => limited.token("alice") });
  const patient = new ChatClient({ url: limited.url, token: () => limited.token("alice"), retryRateLimited: true });
  try {
    await within(10000, "connects", Promise.all([alice.connect(), patient.connect()]));
    const channel = await alice.createChannel({ userIds: [], name: "rates" });
    const message = await alice.send(channel.id, "react to me");
    await alice.addReaction(channel.id, message.seq, "a");
    const refused = await alice.addReaction(channel.id, message.seq, "b").catch((error) => error);
    assert.equal(refused.code, "ERR_RATE_LIMITED");
    assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 1000, `retryAfterMs ${refused.retryAfterMs}`);
    await alice.send(channel.id, "messages have their own rate");
    const started = Date.now();
    for (const kind of ["c", "d", "e"]) await patient.addReaction(channel.id, message.seq, kind);
    assert.ok(Date.now() - started >= 900, "three changes at 2/s, burst 1, take about a second");
    await waitFor("the reactions stored", async () =>
      (await patient.history(channel.id, { afterSeq: 0 })).messages[0].ownReactions.length === 4, { timeoutMs: 5000 });
  } finally {
    alice.close();
    patient.close();
    await limited.dispose();
  }
});
