// The SDK against a live gateway while its connection is cut, by the server (SIGTERM: the
// gateway drains with close 1001 and is started again on the same port and data) and as a
// killed socket (a TCP proxy reset mid-stream): the app's message stream has every message
// once and in order, and a send in flight across a cut resolves once with one stored
// message. The JS twin of Tests/ChatClientTests/ChatClientReconnectTests.swift.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ChatClient } from "../chat-client.js";
import { KillableProxy, LiveGateway, within } from "../test-support/live-gateway.mjs";
import { collect, nothingMoreWithin } from "../test-support/streams.mjs";

const quickBackoff = { baseMs: 20, maxMs: 200 };
let gateway;
let proxy;
const clients = [];

before(async () => {
  gateway = await LiveGateway.start();
  proxy = await KillableProxy.start(gateway.port);
  for (const id of ["alice", "bob"]) await gateway.createUser(id);
});

after(async () => {
  for (const client of clients) client.close();
  await proxy?.close();
  await gateway?.dispose();
});

/** A client for `user`, quick to reconnect; `url` defaults to the gateway itself. */
function client(user, { url = gateway.url, WebSocket } = {}) {
  const made = new ChatClient({
    url,
    token: () => gateway.token(user),
    backoff: quickBackoff,
    requestTimeoutMs: 30000,
    ...(WebSocket ? { WebSocket } : {}),
  });
  clients.push(made);
  return made;
}

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test("every message once and in order across a server close (SIGTERM, restart) and a killed socket", { timeout: 120000 }, async () => {
  const alice = client("alice", { url: proxy.url() });
  const bob = client("bob");
  await within(10000, "alice and bob connect", Promise.all([alice.connect(), bob.connect()]));
  const channel = await alice.createChannel({ userIds: ["bob"], name: "stream" });
  const stream = alice.messages(channel.id, { afterSeq: 0 });
  const total = 300;
  const connectsBefore = proxy.accepted;
  const sending = (async () => {
    for (const n of range(1, total)) {
      await bob.send(channel.id, `m${n}`);
      if (n === 80) {
        await gateway.stop(); // drains: alice and bob get close 1001
        await gateway.run();
      }
      if (n === 180) proxy.killAll(); // alice's socket dies without a close frame
      if (n % 20 === 0) await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const received = await collect(stream, total, { timeoutMs: 30000 });
  await within(30000, "bob's sends finish", sending);
  assert.deepEqual(received.map((m) => m.seq), range(1, total), "every seq once, in order");
  assert.deepEqual(received.map((m) => m.text), range(1, total).map((n) => `m${n}`));
  assert.ok(proxy.accepted - connectsBefore >= 2, `alice reconnected after each cut (${proxy.accepted - connectsBefore} connects)`);
  assert.deepEqual(await nothingMoreWithin(stream, 1000), [], "no duplicate was held back");
  stream.close();
  alice.close();
  bob.close();
});

test("a send in flight across a cut resolves once with one stored message", { timeout: 120000 }, async () => {
  // A WebSocket that arms a cut right after the next message.send went out.
  let cutNextSend = null;
  class TappedWebSocket extends globalThis.WebSocket {
    send(data) {
      super.send(data);
      if (cutNextSend && String(data).includes('"message.send"')) {
        const cut = cutNextSend;
        cutNextSend = null;
        cut();
      }
    }
  }
  const alice = client("alice", { url: proxy.url(), WebSocket: TappedWebSocket });
  await within(10000, "alice connects", alice.connect());
  const channel = await alice.createChannel({ userIds: [], name: "sends" });
  const stream = alice.messages(channel.id, { afterSeq: 0 });
  const connectsBefore = proxy.accepted;
  const sent = [];
  let restarting = null; // the restart a round set off, awaited before the next round
  const killedRounds = 20;
  const restartRounds = 2;
  for (const round of range(0, killedRounds + restartRounds - 1)) {
    if (round < killedRounds) {
      // From before the gateway has the request to after it answered.
      const delay = (round % 5) * 2;
      cutNextSend = () => setTimeout(() => proxy.killAll(), delay);
    } else {
      cutNextSend = () => {
        restarting = gateway.stop().then(() => gateway.run());
      };
    }
    const message = await within(30000, `send s${round}`, alice.send(channel.id, `s${round}`, { clientMessageId: `cm-${round}` }));
    sent.push(message);
    await within(30000, "the gateway restarts", restarting ?? Promise.resolve());
    restarting = null;
  }
  const rounds = range(0, killedRounds + restartRounds - 1);
  assert.deepEqual(sent.map((m) => m.text), rounds.map((n) => `s${n}`));
  assert.deepEqual(sent.map((m) => m.clientMessageId), rounds.map((n) => `cm-${n}`));
  const stored = (await alice.history(channel.id, { afterSeq: 0, limit: 100 })).messages;
  assert.deepEqual(stored.map((m) => m.clientMessageId), rounds.map((n) => `cm-${n}`), "each stored once, in order");
  assert.deepEqual(stored.map((m) => m.seq), sent.map((m) => m.seq));
  assert.ok(proxy.accepted - connectsBefore > 5, `the cuts happened (${proxy.accepted - connectsBefore} connects)`);
  // The app's own stream has each sent message once.
  const streamed = await collect(stream, rounds.length, { timeoutMs: 10000 });
  assert.deepEqual(streamed.map((m) => m.clientMessageId), rounds.map((n) => `cm-${n}`));
  assert.deepEqual(await nothingMoreWithin(stream, 500), []);
  stream.close();
  alice.close();
});
