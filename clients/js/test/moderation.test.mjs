// Moderation (PROTOCOL.md §16) through the JS SDK against the release gateway: roles, freeze
// and slow mode (their send errors, which retryRateLimited does not wait out), plain and shadow
// channel bans, mutes, flags listed by the admin API, and an app-wide ban (close 4003) ending a
// live client with its refusal. The JS twin of Tests/ChatClientTests/ChatClientModerationTests.swift.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ChatClient, ConnectionState } from "../chat-client.js";
import { LiveGateway, waitFor, within } from "../test-support/live-gateway.mjs";

let gateway;
const clients = [];

before(async () => {
  gateway = await LiveGateway.start({ LIMITS_USERCHANGESPERSECOND: "0" });
  for (const id of ["alice", "bob", "carol", "dave"]) await gateway.createUser(id);
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

/** The ChatError a call rejects with (null: it resolved). */
async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error;
  }
}

const codeOf = async (promise) => (await errorOf(promise))?.code ?? null;

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

test("roles, freeze and slow mode answer as the protocol says", { timeout: 60000 }, async () => {
  const alice = client("alice");
  const bob = client("bob");
  const carol = client("carol", { retryRateLimited: true });
  await within(10000, "connects", Promise.all([alice.connect(), bob.connect(), carol.connect()]));
  const channel = await alice.createChannel({ userIds: ["bob", "carol"], name: "moderated" });
  assert.deepEqual(channel.roles, { alice: "owner" });
  assert.deepEqual([channel.frozen, channel.slowModeSeconds, channel.muted], [false, 0, false]);
  assert.deepEqual(channel.bans, {}, "an owner is shown the (empty) bans");
  assert.equal((await bob.channel(channel.id)).bans, undefined, "a member is not");

  assert.equal(await codeOf(bob.setRole(channel.id, "carol", "moderator")), "ERR_FORBIDDEN");
  assert.equal(await codeOf(alice.setRole(channel.id, "bob", "owner")), "ERR_BAD_REQUEST");
  const bobHearsRole = nextEvent(bob, "channel.updated", (data) => data.id === channel.id && data.roles?.bob);
  assert.deepEqual((await alice.setRole(channel.id, "bob", "moderator")).roles, { alice: "owner", bob: "moderator" });
  const heard = await bobHearsRole;
  assert.equal(heard.roles.bob, "moderator");
  assert.deepEqual(heard.bans, {}, "a moderator is shown the bans too");

  // Freeze: a member may not; a moderator may, and still sends.
  assert.equal(await codeOf(carol.updateChannel(channel.id, { frozen: true })), "ERR_FORBIDDEN");
  assert.equal((await bob.updateChannel(channel.id, { frozen: true })).frozen, true);
  const frozen = await errorOf(carol.send(channel.id, "let me in"));
  assert.equal(frozen.code, "ERR_CHANNEL_FROZEN");
  assert.equal(frozen.retryAfterMs, undefined);
  await bob.send(channel.id, "moderators still speak");
  assert.equal((await alice.updateChannel(channel.id, { frozen: false })).frozen, false);

  // Slow mode: refused at once with retryAfterMs, even with retryRateLimited.
  assert.equal(await codeOf(alice.updateChannel(channel.id, { slowModeSeconds: 3601 })), "ERR_BAD_REQUEST");
  assert.equal((await alice.updateChannel(channel.id, { slowModeSeconds: 5 })).slowModeSeconds, 5);
  await carol.send(channel.id, "one");
  const started = Date.now();
  const slow = await errorOf(carol.send(channel.id, "two"));
  assert.ok(Date.now() - started < 2000, "not waited out");
  assert.equal(slow.code, "ERR_SLOW_MODE");
  assert.ok(slow.retryAfterMs > 0 && slow.retryAfterMs <= 5000, `retryAfterMs ${slow.retryAfterMs}`);
  await bob.send(channel.id, "moderators are not slowed");
  await bob.send(channel.id, "not at all");
  assert.equal((await alice.updateChannel(channel.id, { slowModeSeconds: 0 })).slowModeSeconds, 0);
  await carol.send(channel.id, "two, once slow mode is off");

  assert.deepEqual((await alice.setRole(channel.id, "bob", "member")).roles, { alice: "owner" });
  assert.equal(await codeOf(bob.updateChannel(channel.id, { frozen: true })), "ERR_FORBIDDEN");
});

test("plain and shadow bans, mutes and flags", { timeout: 60000 }, async () => {
  const alice = client("alice");
  const bob = client("bob");
  const carol = client("carol");
  await within(10000, "connects", Promise.all([alice.connect(), bob.connect(), carol.connect()]));
  const channel = await alice.createChannel({ userIds: ["bob", "carol"], name: "bans" });
  const said = await alice.send(channel.id, "before any ban");

  assert.equal(await codeOf(bob.ban(channel.id, "carol")), "ERR_FORBIDDEN");
  assert.equal(await codeOf(alice.ban(channel.id, "alice")), "ERR_FORBIDDEN");

  // A shadow ban with an end: carol is answered as ever, nobody else gets her message.
  const untilMs = Date.now() + 3600000;
  assert.deepEqual(await alice.ban(channel.id, "carol", { shadow: true, untilMs }), {});
  assert.deepEqual((await alice.channel(channel.id)).bans, { carol: { shadow: true, untilMs } });
  const carolsView = await carol.channel(channel.id);
  assert.equal(carolsView.bans, undefined);
  assert.ok(carolsView.members.includes("carol"), "nothing tells her");
  const bobGot = [];
  bob.onChannel(channel.id, ({ event, data }) => event === "message.new" && bobGot.push(data.seq));
  const hidden = await carol.send(channel.id, "under the shadow");
  assert.ok((await carol.history(channel.id)).messages.some((m) => m.seq === hidden.seq), "her own history has it");
  for (const reader of [alice, bob]) {
    assert.deepEqual((await reader.history(channel.id)).messages.map((m) => m.seq), [said.seq]);
  }
  await alice.unban(channel.id, "carol");
  assert.deepEqual((await alice.channel(channel.id)).bans, {});
  const heard = await carol.send(channel.id, "heard again");
  await waitFor("carol's message after the unban in bob's events", () => bobGot.includes(heard.seq), { timeoutMs: 5000 });
  assert.deepEqual(bobGot, [heard.seq], "nothing from under the shadow");

  // A plain ban takes carol out until she is invited back.
  await alice.ban(channel.id, "carol");
  assert.deepEqual((await alice.channel(channel.id)).members, ["alice", "bob"]);
  assert.equal(await codeOf(carol.channel(channel.id)), "ERR_CHANNEL_NOT_FOUND");
  await alice.unban(channel.id, "carol");
  assert.deepEqual(await alice.unban(channel.id, "carol"), {}, "lifting none succeeds too");
  assert.equal(await codeOf(carol.channel(channel.id)), "ERR_CHANNEL_NOT_FOUND", "not put back");
  assert.ok((await alice.invite(channel.id, ["carol"])).members.includes("carol"));

  // Mutes are the muter's own.
  assert.equal((await bob.muteChannel(channel.id)).muted, true);
  assert.equal((await alice.channel(channel.id)).muted, false);
  assert.equal((await bob.unmuteChannel(channel.id)).muted, false);
  assert.equal((await bob.muteChannel(channel.id, { untilMs })).muted, true);
  assert.deepEqual(await bob.muteUsers(["alice", "nobody", "bob"]),
    { alice: "success", nobody: "ERR_UID_NOT_FOUND", bob: "ERR_BAD_REQUEST" });
  assert.deepEqual(await bob.unmuteUsers(["alice"]), { alice: "success" });

  // Flags: listed by the admin API.
  assert.equal(await carol.flagMessage(channel.id, said.seq, { reason: "spam" }), undefined);
  assert.equal(await codeOf(carol.flagMessage(channel.id, 9999)), "ERR_MESSAGE_NOT_FOUND");
  assert.equal(await codeOf(carol.flagMessage(channel.id, said.seq, { reason: "x".repeat(501) })), "ERR_BAD_REQUEST");
  const { status, body } = await gateway.admin("GET", "/v1/admin/flags");
  assert.equal(status, 200);
  const flags = body.flags.filter((flag) => flag.channelId === channel.id);
  assert.equal(flags.length, 1);
  assert.deepEqual([flags[0].reporterId, flags[0].senderId, flags[0].seq, flags[0].reason, flags[0].messageId],
    ["carol", "alice", said.seq, "spam", said.id]);
});

test("close 4003 (banned app-wide) ends a live client with its refusal; refused at connect until lifted", { timeout: 20000 }, async () => {
  const dave = client("dave");
  await within(10000, "dave connects", dave.connect());
  // Nothing in flight: a reply sent as the gateway closes can reach Node's WebSocket behind
  // the close frame, which then reports 1006 instead of 4003.
  await waitFor("nothing in flight", () => dave.requests.size === 0, { timeoutMs: 5000 });
  const refused = nextEvent(dave, "refused");
  const closed = nextEvent(dave, "state", (change) => change.state === ConnectionState.closed);
  assert.equal((await gateway.admin("POST", "/v1/admin/users/dave/ban", {})).status, 200);
  const refusal = await refused;
  assert.deepEqual([refusal.name, refusal.code, refusal.closeCode], ["ChatError", "ERR_FORBIDDEN", 4003]);
  const change = await closed;
  assert.deepEqual([change.closeCode, change.final], [4003, true]);
  assert.equal(dave.refusal, refusal);
  await assert.rejects(dave.me(), { code: "ERR_NOT_CONNECTED" });

  await assert.rejects(within(10000, "a banned connect", dave.connect()), { code: "ERR_FORBIDDEN", closeCode: 4003 });
  assert.equal((await gateway.admin("DELETE", "/v1/admin/users/dave/ban")).status, 200);
  await within(10000, "dave connects again", dave.connect());
  assert.equal(dave.refusal, null);
  assert.equal((await dave.me()).user.id, "dave");
});
