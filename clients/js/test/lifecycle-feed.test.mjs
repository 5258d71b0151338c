// The message lifecycle (PROTOCOL.md §15) on the client, without a gateway: ChannelFeed with
// versions (every message once as "new", every later state once as "updated", reactions
// after the reads they raced), applyReaction, and ChatClient's methods and events against a
// scripted WebSocket that answers like the gateway would.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { applyReaction, ChannelFeed, ChatClient } from "../chat-client.js";
import { ScriptedGateway } from "../test-support/scripted-websocket.mjs";
import { waitFor } from "../test-support/live-gateway.mjs";

const message = (seq, version, extra = {}) => ({ id: `m${seq}`, channelId: "c", seq, senderId: "bob", text: `t${seq}`, version, ...extra });
const edited = (seq, version, text) => message(seq, version, { text, editedAt: 1000 + version });
const reaction = (seq, reactions, extra = {}) => ({ channelId: "c", seq, userId: "bob", kind: "👍", reactions, added: true, ...extra });
const page = (messages, version, next = null) => ({ messages, version, next });

/** "new 3", "updated 1@6", "reactions 2": what a list of items says, in order. */
const summary = (items) => items.map((item) => (item.type === "reactions" ? `reactions ${item.reaction.seq}`
  : item.type === "new" ? `new ${item.message.seq}` : `updated ${item.message.seq}@${item.message.version}`));

/** Runs `steps` (functions of the feed returning `{ deliver, action }`) and gathers what they deliver. */
function run(feed, ...steps) {
  const out = [];
  let action = null;
  for (const step of steps) {
    const result = step(feed);
    out.push(...result.deliver);
    action = result.action;
  }
  return { out, action };
}

describe("ChannelFeed with versions", () => {
  test("a reconnect catches up with message.changes after the last version seen live", () => {
    const feed = new ChannelFeed(0, { version: 0 });
    const live = run(feed, (f) => f.received(message(1, 1)), (f) => f.received(message(2, 2)), (f) => f.updated(edited(1, 3, "fixed")));
    assert.equal(feed.version, 2, "a second change may share version 3 (a reply and its parent)");
    assert.deepEqual(feed.catchUp(), { readChangesAfterVersion: 2 });
    const tombstone = message(2, 4, { text: "", deletedAt: 99 });
    const caught = feed.changesRead(page([tombstone, message(3, 5), edited(1, 6, "again")], 6));
    assert.deepEqual(summary([...live.out, ...caught.deliver]),
      ["new 1", "new 2", "updated 1@3", "updated 2@4", "updated 1@6", "new 3"]);
    assert.equal(caught.action, null);
    assert.equal(feed.version, 6);
    assert.equal(feed.reading, false);
  });

  test("a change that arrives live and in a read, or as an answer and as an event, goes out once; an older state never", () => {
    const feed = new ChannelFeed(2, { version: 10 });
    feed.catchUp();
    const { out } = run(feed,
      (f) => f.updated(edited(1, 11, "x")),
      (f) => f.changesRead(page([edited(1, 11, "x")], 11)),
      (f) => f.updated(edited(2, 13, "mine"), { live: false }),
      (f) => f.updated(edited(2, 13, "mine")),
      (f) => f.updated(edited(2, 12, "older")));
    assert.deepEqual(summary(out), ["updated 1@11", "updated 2@13"]);
    assert.equal(feed.version, 12);
  });

  test("a reply and its parent share a version, and both go out", () => {
    const feed = new ChannelFeed(2, { version: 2 });
    const { out } = run(feed, (f) => f.received(message(3, 3, { parentSeq: 1 })), (f) => f.updated(message(1, 3, { replyCount: 1 })));
    assert.deepEqual(summary(out), ["new 3", "updated 1@3"]);
    assert.deepEqual(feed.catchUp(), { readChangesAfterVersion: 2 }, "a drop between the two reads both again");
  });

  test("new messages from changes go out in seq order once every page is read", () => {
    const feed = new ChannelFeed(1, { version: 1 });
    assert.deepEqual(feed.catchUp(), { readChangesAfterVersion: 1 });
    const first = feed.changesRead(page([message(3, 3), message(4, 4)], 6, 4));
    assert.deepEqual(first, { deliver: [], action: { readChangesAfterVersion: 4 } }, "held until every page is read");
    const second = feed.changesRead(page([edited(2, 5, "e"), message(5, 6)], 6));
    assert.deepEqual(summary(second.deliver), ["new 2", "new 3", "new 4", "new 5"]);
    assert.equal(second.deliver[0].message.text, "e", "in its latest state");
  });

  test("an empty page with more after it reads on; a next that does not move ends the read", () => {
    const feed = new ChannelFeed(1, { version: 1 });
    feed.catchUp();
    assert.deepEqual(feed.changesRead(page([], 41, 40)), { deliver: [], action: { readChangesAfterVersion: 40 } });
    const last = feed.changesRead(page([message(2, 41)], 41, 40));
    assert.deepEqual([summary(last.deliver), last.action, feed.reading, feed.version], [["new 2"], null, false, 41]);
  });

  test("a read cut off between pages starts again after the pages read, and live events during it do not move the cursor", () => {
    const feed = new ChannelFeed(3, { version: 3 });
    feed.catchUp();
    feed.changesRead(page([edited(1, 4, "a")], 40, 4));
    feed.updated(edited(2, 41, "live"));
    feed.readFailed();
    assert.deepEqual(feed.catchUp(), { readChangesAfterVersion: 4 }, "changes 5…40 were never read");
  });

  test("a gap in seqs is read as changes; what the read leaves out is hidden; an update ahead of its message goes out as new", () => {
    const feed = new ChannelFeed(1, { version: 1 });
    assert.deepEqual(feed.received(message(3, 3)).action, { readChangesAfterVersion: 1 });
    const first = feed.changesRead(page([message(3, 3)], 3));
    assert.deepEqual(summary(first.deliver), ["new 3"]);
    assert.deepEqual(feed.updated(edited(5, 6, "e")).action, { readChangesAfterVersion: 3 });
    const second = feed.changesRead(page([message(4, 4), edited(5, 6, "e")], 6));
    assert.deepEqual(summary(second.deliver), ["new 4", "new 5"]);
  });

  test("reactions during a read wait for it; reactions of messages the read does not return are dropped", () => {
    const feed = new ChannelFeed(2, { version: 2 });
    const { out } = run(feed,
      (f) => f.reacted(reaction(1, { "👍": 1 })),
      (f) => ({ deliver: [], action: f.catchUp() }),
      (f) => f.reacted(reaction(2, { "👍": 2 })),
      (f) => f.changesRead(page([message(2, 3, { reactions: { "👍": 1 } })], 3)));
    assert.deepEqual(summary(out), ["reactions 1", "updated 2@3", "reactions 2"], "the live counts are not overtaken by the read's");
    assert.deepEqual(feed.reacted(reaction(9, { "👍": 1 })).action, { readChangesAfterVersion: 3 });
    assert.deepEqual(feed.changesRead(page([], 3)).deliver, []);
  });

  test("a gateway without message.changes falls back to history", () => {
    const feed = new ChannelFeed(0, { version: 0 });
    assert.deepEqual(feed.catchUp(), { readChangesAfterVersion: 0 });
    assert.deepEqual(feed.changesUnsupported(), { readHistoryAfterSeq: 0 });
    assert.deepEqual(summary(feed.historyRead([message(1)], false).deliver), ["new 1"]);
    assert.equal(feed.version, null);
    assert.deepEqual(feed.catchUp(), { readHistoryAfterSeq: 1 });
  });

  test("a start at a seq without its version reads history, then the changes since the start", () => {
    const feed = new ChannelFeed(2, { version: 20, backfill: true });
    assert.deepEqual(feed.catchUp(), { readHistoryAfterSeq: 2 });
    const history = feed.historyRead([message(3, 3), edited(4, 19, "e")], false);
    assert.deepEqual(history.action, { readChangesAfterVersion: 20 });
    const changes = feed.changesRead(page([edited(1, 21, "old one"), message(5, 22)], 22));
    assert.deepEqual(summary([...history.deliver, ...changes.deliver]), ["new 3", "new 4", "updated 1@21", "new 5"]);
    assert.equal(feed.version, 22);
  });
});

describe("applyReaction", () => {
  test("folds the counts, and the kinds of the own user only; a tombstone or another message is left alone", () => {
    let m = message(4, 3, { reactions: { "👍": 1 }, ownReactions: [] });
    m = applyReaction(m, reaction(4, { "👍": 1, "🎉": 1 }, { userId: "alice", kind: "🎉" }), "alice");
    assert.deepEqual([m.reactions, m.ownReactions], [{ "👍": 1, "🎉": 1 }, ["🎉"]]);
    m = applyReaction(m, reaction(4, { "👍": 0, "🎉": 1 }, { added: false }), "alice");
    assert.deepEqual([m.reactions, m.ownReactions], [{ "🎉": 1 }, ["🎉"]]);
    assert.deepEqual(applyReaction(m, reaction(4, {}, { userId: "alice", kind: "🎉", added: false }), "alice").ownReactions, []);
    assert.equal(applyReaction(m, reaction(5, { "👀": 1 }), "alice"), m);
    const tombstone = { ...m, deletedAt: 9, reactions: {} };
    assert.equal(applyReaction(tombstone, reaction(4, { "👍": 3 }), "alice"), tombstone);
  });
});

describe("ChatClient's lifecycle calls and events (a scripted gateway)", () => {
  const connected = async (gateway, options = {}) => {
    const client = new ChatClient({ url: "ws://scripted/v1/ws", token: "t", WebSocket: gateway.WebSocket, keepAliveMs: 0,
      backoff: { baseMs: 5, maxMs: 20 }, ...options });
    await client.connect();
    return client;
  };
  const listen = (stream) => {
    const items = [];
    stream.onItem = (item) => items.push(item);
    return items;
  };
  const seen = (items) => items.map((i) => `${i.type} ${i.message ? `${i.message.seq}@${i.message.version}` : i.reaction.seq}`);

  test("requests carry the §15 params; answers and their events reach the channel's stream once, updates marked", async () => {
    const gateway = new ScriptedGateway();
    gateway.seed("first");
    gateway.seed("second");
    const client = await connected(gateway);
    assert.equal(client.userId, "alice");
    const changes = [];
    client.on("message.updated", ({ change }) => changes.push(change));
    const stream = client.messages("c");
    const items = listen(stream);
    await stream.ready;
    await waitFor("the start's catch-up read", () => gateway.last("message.changes"), { timeoutMs: 2000 });
    assert.deepEqual(gateway.last("message.changes"), { type: "message.changes", channelId: "c", afterVersion: 2, limit: 100 });

    const reply = await client.send("c", "in thread", { parentSeq: 1, mentionedUserIds: ["bob"] });
    assert.deepEqual(pick(gateway.last("message.send"), ["parentSeq", "mentionedUserIds"]), { parentSeq: 1, mentionedUserIds: ["bob"] });
    assert.equal(reply.parentSeq, 1);
    const edit = await client.updateMessage("c", 2, { text: "better", mentionedUserIds: [] });
    assert.deepEqual(pick(gateway.last("message.update"), ["channelId", "seq", "text", "mentionedUserIds"]),
      { channelId: "c", seq: 2, text: "better", mentionedUserIds: [] });
    assert.ok(edit.editedAt);
    const reacted = await client.addReaction("c", 2, "👍");
    assert.deepEqual(pick(gateway.last("reaction.add"), ["channelId", "seq", "kind"]), { channelId: "c", seq: 2, kind: "👍" });
    assert.deepEqual([reacted.reactions, reacted.ownReactions], [{ "👍": 1 }, ["👍"]]);
    const tombstone = await client.deleteMessage("c", 2);
    assert.ok(tombstone.deletedAt);
    await assert.rejects(client.removeReaction("c", 2, "👍"), { code: "ERR_MESSAGE_DELETED" });
    // Each event came before its answer: the stream has each state once.
    assert.deepEqual(seen(items), ["new 3@3", "updated 1@3", "updated 2@4", "reactions 2", "updated 2@5", "updated 2@6"]);
    assert.deepEqual(changes, ["reply", "edit", "delete"]);
    assert.equal(items[3].reaction.added, true);

    const all = await client.changes("c", 0, { pageSize: 2 });
    assert.deepEqual(gateway.requests.filter((r) => r.type === "message.changes").slice(-2).map((r) => [r.afterVersion, r.limit]),
      [[0, 2], [3, 2]]);
    assert.deepEqual(all.messages.map((m) => `${m.seq}@${m.version}`), ["1@3", "3@3", "2@6"]);
    assert.equal(all.version, 6);
    const thread = await client.thread("c", 1, { limit: 10 });
    assert.deepEqual(pick(gateway.last("message.history"), ["parentSeq", "limit"]), { parentSeq: 1, limit: 10 });
    assert.deepEqual(thread.messages.map((m) => m.seq), [3]);
    client.close();
  });

  test("a client that was away gets the edits, deletes, reactions and messages it missed, each once", async () => {
    const gateway = new ScriptedGateway();
    gateway.seed("one");
    gateway.seed("two");
    const client = await connected(gateway);
    const stream = client.messages("c", { afterSeq: 0 });
    const items = listen(stream);
    await waitFor("the two messages", () => items.length === 2, { timeoutMs: 2000 });
    gateway.edit(1, "one, live");
    await waitFor("the live edit", () => items.length === 3, { timeoutMs: 2000 });
    gateway.refuseConnections = true;
    gateway.drop();
    // While the client is away: bob edits 1 twice, deletes 2, reacts to 1, sends 3 and 4.
    gateway.edit(1, "one, fixed");
    gateway.remove(2);
    gateway.seed("three");
    gateway.react(1, "bob", "🎉", true);
    gateway.edit(1, "one, final");
    gateway.seed("four");
    const readsBefore = gateway.requests.filter((r) => r.type === "message.changes").length;
    gateway.refuseConnections = false;
    await waitFor("the catch-up", () => items.length === 7, { timeoutMs: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(seen(items), ["new 1@1", "new 2@2", "updated 1@3", "updated 2@5", "updated 1@8", "new 3@6", "new 4@9"]);
    assert.equal(items[4].message.text, "one, final");
    assert.deepEqual(items[4].message.reactions, { "🎉": 1 });
    assert.ok(items[3].message.deletedAt);
    const reads = gateway.requests.filter((r) => r.type === "message.changes").slice(readsBefore);
    assert.deepEqual(reads.map((r) => r.afterVersion), [2], "one read, after the last version known complete");
    client.close();
  });
});

function pick(object, keys) {
  return Object.fromEntries(keys.map((key) => [key, object?.[key]]));
}
