// docs/clients.md's JavaScript example is the code that runs here: the document holds
// clients/js/examples/first-app.mjs verbatim, and the app runs against a live gateway with
// a friend answering. The JS twin of Tests/ChatClientTests/FirstAppTests.swift.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ChatClient } from "../chat-client.js";
import { run } from "../examples/first-app.mjs";
import { LiveGateway, repositoryRoot, within } from "../test-support/live-gateway.mjs";

test("the document shows the example that runs", () => {
  const source = readFileSync(join(repositoryRoot, "clients/js/examples/first-app.mjs"), "utf8");
  const document = readFileSync(join(repositoryRoot, "docs/clients.md"), "utf8");
  assert.ok(document.includes("```js\n" + source + "```"),
    "docs/clients.md must hold clients/js/examples/first-app.mjs verbatim in a ```js block");
});

test("the first app connects, lists, sends, receives and blocks", { timeout: 30000 }, async () => {
  const gateway = await LiveGateway.start();
  const bob = new ChatClient({ url: gateway.url, token: () => gateway.token("bob") });
  try {
    await gateway.createUser("bob", "Bob");
    await within(10000, "bob connects", bob.connect());
    bob.on("message.new", (message) => {
      if (message.text === "hello") bob.send(message.channelId, "hi alice").catch(() => {});
    });
    const lines = [];
    await within(20000, "the first app runs",
      run({ url: gateway.url, friend: "bob", token: () => gateway.token("alice"), say: (line) => lines.push(line) }));
    assert.deepEqual(lines, ["sent #1", "bob: hi alice", "blocked bob: true", 'blocked list: ["bob"]']);
  } finally {
    bob.close();
    await gateway.dispose();
  }
});
