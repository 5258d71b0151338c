// Runs the first app by hand against a gateway (scripts/serve), as the user whose token
// CHAT_TOKEN holds, with FRIEND answering:
//   CHAT_TOKEN=$(.build/release/chat-gateway token --user alice) FRIEND=bob \
//     node --experimental-websocket clients/js/examples/run-first-app.mjs
import { run } from "./first-app.mjs";

const token = process.env.CHAT_TOKEN;
if (!token) {
  console.error("set CHAT_TOKEN (chat-gateway token --user alice) and FRIEND");
  process.exit(2);
}
await run({ url: process.env.CHAT_URL || "ws://127.0.0.1:8080/v1/ws", friend: process.env.FRIEND || "bob", token });
