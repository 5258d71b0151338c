// The blocking API in the shape app developers know: `block` with a result per id, and a
// blocked-users query paging through 250 blocked users with search and every direction
// (a gateway with blocking.revealBlockedBy). The JS twin of
// Tests/ChatClientTests/BlockedUsersQueryTests.swift.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ChatClient } from "../chat-client.js";
import { LiveGateway, within } from "../test-support/live-gateway.mjs";

let gateway;
let alice;

before(async () => {
  gateway = await LiveGateway.start({ BLOCKING_REVEALBLOCKEDBY: "true" });
});

after(async () => {
  alice?.close();
  await gateway?.dispose();
});

/** Every page of `query`: the ids in order and each page's size. */
async function all(query) {
  const ids = [];
  const pages = [];
  for (let page = await query.next(); page !== null; page = await query.next()) {
    ids.push(...page.map((user) => user.id));
    pages.push(page.length);
    assert.ok(pages.length <= 100, "the query ends");
  }
  assert.equal(query.hasNext, false);
  return { ids, pages };
}

test("pages through 250 blocked users with search and both directions; a result per id", { timeout: 60000 }, async () => {
  const users = Array.from({ length: 250 }, (_, i) => `u${String(i).padStart(3, "0")}`);
  const others = ["x0", "x1", "x2", "x3", "x4"];
  await within(30000, "creating 255 users", (async () => {
    for (const id of [...users, ...others]) await gateway.createUser(id, `Name ${id}`);
  })());
  alice = new ChatClient({ url: gateway.url, token: () => gateway.token("alice") });
  await within(10000, "alice connects", alice.connect());

  for (let start = 0; start < 250; start += 100) {
    const results = await alice.block(users.slice(start, start + 100));
    assert.equal(Object.keys(results).length, Math.min(100, 250 - start));
    assert.ok(Object.values(results).every((result) => result === "success"), JSON.stringify(results));
  }
  assert.deepEqual(await alice.block(["alice", "nobody", "u000"]),
    { alice: "ERR_CANNOT_BLOCK_SELF", nobody: "ERR_UID_NOT_FOUND", u000: "success" });
  // Some of them, and five others, blocked alice.
  for (const id of [...users.slice(0, 20), ...others]) {
    const { status } = await gateway.admin("POST", `/v1/admin/users/${id}/blocks`, { userIds: ["alice"] });
    assert.equal(status, 200);
  }

  const byMe = await all(alice.blockedUsersQuery({ direction: "byMe", limit: 100 }));
  assert.deepEqual(byMe.ids, users);
  assert.deepEqual(byMe.pages, [100, 100, 50]);
  const searched = await all(alice.blockedUsersQuery({ limit: 30, search: "U1" }));
  assert.deepEqual(searched.ids, users.slice(100, 200));
  assert.deepEqual(searched.pages, [30, 30, 30, 10]);
  const byName = await all(alice.blockedUsersQuery({ limit: 100, search: "name u24" }));
  assert.deepEqual(byName.ids, users.slice(240, 250));
  const me = await all(alice.blockedUsersQuery({ direction: "me", limit: 10 }));
  assert.deepEqual(me.ids, [...users.slice(0, 20), ...others]);
  assert.deepEqual(me.pages, [10, 10, 5]);
  const both = await all(alice.blockedUsersQuery({ direction: "both", limit: 100 }));
  assert.deepEqual(both.ids, [...users, ...others]);
  const some = await all(alice.blockedUsersQuery({ direction: "both", userIds: ["u005", "u100", "x3", "bob"] }));
  assert.deepEqual(some.ids, ["u005", "u100", "x3"]);

  const flags = await alice.blockedUsersQuery({ direction: "both", userIds: ["u005", "u100", "x3"] }).next();
  assert.deepEqual(flags.map((user) => [user.blockedByMe, user.hasBlockedMe]), [[true, true], [true, false], [false, true]]);
  assert.deepEqual(await alice.unblock(["u000", "alice", "nobody"]),
    { u000: "success", alice: "ERR_CANNOT_BLOCK_SELF", nobody: "ERR_UID_NOT_FOUND" });
  assert.equal((await all(alice.blockedUsersQuery({ limit: 100 }))).ids.length, 249);

  // Refused requests carry the gateway's code.
  await assert.rejects(alice.blockedUsersQuery({ limit: 0 }).next(), { name: "ChatError", code: "ERR_INVALID_LIMIT" });
  await assert.rejects(alice.block(users.slice(0, 101)), { code: "ERR_TOO_MANY_IDS" });
});
