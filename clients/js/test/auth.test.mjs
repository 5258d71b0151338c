// The token after the upgrade (PROTOCOL.md §1, v1.2) from the JS SDK's side, against live
// gateways: the token goes in the first message, never in the URL, and a refused one comes
// back as a close code the client acts on (a browser cannot read a refused upgrade's status,
// so before this the client kept reconnecting with a token the gateway would never take).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ChatClient, ConnectionState } from "../chat-client.js";
import { KillableProxy, LiveGateway, waitFor, within } from "../test-support/live-gateway.mjs";

const quickBackoff = { baseMs: 20, maxMs: 200 };

describe("token after the upgrade", () => {
  let gateway;
  let proxy;
  const clients = [];
  const client = (options) => {
    const made = new ChatClient({ url: proxy.url(), backoff: quickBackoff, ...options });
    clients.push(made);
    return made;
  };
  const closedFor = (made) =>
    new Promise((resolve) => made.on("state", (change) => change.state === ConnectionState.closed && resolve(change)));

  before(async () => {
    gateway = await LiveGateway.start({ LIMITS_MAXCONNECTIONSPERUSER: "1" });
    proxy = await KillableProxy.start(gateway.port);
    for (const id of ["alice", "bob", "carol", "erin"]) await gateway.createUser(id);
  });

  after(async () => {
    for (const made of clients) made.close();
    await proxy?.close();
    await gateway?.dispose();
  });

  test("the token never appears in the request line; the auth reply is me's result", { timeout: 20000 }, async () => {
    const token = await gateway.token("alice");
    const alice = client({ token, device: "web" });
    const opened = new Promise((resolve) => alice.on("open", resolve));
    const linesBefore = proxy.requestLines.length;
    await within(10000, "alice connects", alice.connect());
    const lines = proxy.requestLines.slice(linesBefore);
    assert.equal(lines.length, 1);
    assert.ok(!lines[0].includes(token.split(".")[1]), `no part of the token in the request line: ${lines[0]}`);
    assert.ok(!lines[0].includes("token="));
    assert.match(lines[0], /^GET \/v1\/ws\?auth=message&device=web HTTP\/1\.1$/);
    assert.equal((await opened).me.user.id, "alice");
    // A reconnect sends it the same way.
    proxy.killAll();
    await waitFor("alice reconnected", () => proxy.requestLines.length > linesBefore + 1 && alice.state === ConnectionState.open);
    for (const line of proxy.requestLines.slice(linesBefore)) assert.ok(!line.includes("token"), line);
    alice.close();
  });

  test("a refused token stops reconnecting (one fresh token is tried, then the client ends)", { timeout: 30000 }, async () => {
    let calls = 0;
    let valid = true;
    const bob = client({ token: async () => { calls += 1; return valid ? gateway.token("bob") : "not-a-token"; } });
    await within(10000, "bob connects", bob.connect());
    // The gateway comes back with another secret: bob's token, and the one his app now hands
    // out, are refused. Before v1.2 the client could not tell and reconnected forever.
    valid = false;
    const closed = closedFor(bob);
    await gateway.stop();
    gateway.settings.AUTH_JWTSECRET = "a-rotated-secret-of-at-least-32-bytes-for-hs256";
    await gateway.run();
    const change = await within(15000, "bob's client gives up", closed);
    assert.equal(change.closeCode, 4004);
    assert.equal(change.final, true);
    assert.match(change.reason, /^ERR_NOT_LOGGED_IN/);
    assert.equal(calls, 2, "the first token, then one fresh token");
    const attempts = proxy.accepted;
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(proxy.accepted, attempts, "no reconnect after giving up");
    await assert.rejects(bob.me(), { code: "ERR_NOT_CONNECTED" });
  });

  test("connect() with a refused token rejects with its §11 code and close code", { timeout: 20000 }, async () => {
    const forged = client({ token: "not-a-token" });
    await assert.rejects(within(10000, "refused", forged.connect()), { code: "ERR_NOT_LOGGED_IN", closeCode: 4004 });
    assert.equal(forged.state, ConnectionState.closed);
    const { body } = await gateway.admin("POST", "/v1/admin/tokens", { userId: "carol", ttlSeconds: 1 });
    await new Promise((r) => setTimeout(r, 1100));
    const expired = client({ token: body.token });
    await assert.rejects(within(10000, "expired", expired.connect()), { code: "ERR_TOKEN_EXPIRED", closeCode: 4001 });
  });

  test("4005 when the user holds its connection cap; 4002 for a deactivated user, never retried", { timeout: 20000 }, async () => {
    const first = client({ token: () => gateway.token("carol") });
    await within(10000, "carol connects", first.connect());
    const second = client({ token: () => gateway.token("carol") });
    await assert.rejects(within(10000, "over the cap", second.connect()), { code: "ERR_FORBIDDEN", closeCode: 4005 });
    first.close();
    assert.equal((await gateway.admin("POST", "/v1/admin/users/erin/deactivate")).status, 200);
    let calls = 0;
    const erin = client({ token: () => { calls += 1; return gateway.token("erin"); } });
    await assert.rejects(within(10000, "deactivated", erin.connect()), { code: "ERR_FORBIDDEN", closeCode: 4002 });
    assert.equal(calls, 1, "a deactivated user is not worth another token");
  });
});
