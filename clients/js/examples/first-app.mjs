import { ChatClient } from "../chat-client.js";

/** The first app of docs/clients.md: connect, list channels, send, receive, block. */
export async function run({ url, friend, token, say = console.log }) {
  const client = new ChatClient({ url, token });
  await client.connect();

  // Channels, newest activity first, with what is unread in each.
  const { channels } = await client.channels({ limit: 20 });
  for (const channel of channels) say(`${channel.name}: ${channel.unreadCount} unread`);

  // A 1-to-1 with a friend, and every message in it, once and in order (and, as
  // "updated", every later edit, delete or reply count of one of them).
  const chat = await client.createChannel({ userIds: [friend], name: "first app", distinct: true });
  const messages = client.messages(chat.id);
  await messages.ready; // it starts after the newest message now
  const sent = await client.send(chat.id, "hello");
  say(`sent #${sent.seq}`);
  for await (const item of messages) {
    // "new": the next message; "updated" / "reactions": a later change of one (§15).
    if (item.type !== "new" || item.message.senderId !== friend) continue;
    const message = item.message;
    say(`${friend}: ${message.text}`);
    await client.markRead(chat.id, message.seq);
    break;
  }

  // Blocking, with a result per user (Sendbird's blockUser, CometChat's blockUsers).
  const results = await client.block([friend]);
  say(`blocked ${friend}: ${results[friend] === "success"}`);
  const blocked = client.blockedUsersQuery({ direction: "byMe", limit: 50 });
  for (let page = await blocked.next(); page !== null; page = await blocked.next()) {
    say(`blocked list: ${JSON.stringify(page.map((user) => user.id))}`);
  }
  client.close();
}
