// Load for scripts/redis-pause-check (issue 26): users on two cluster nodes send through a
// `redis-cli DEBUG SLEEP`; every send's answer and latency, /readyz over time, the
// session.resync events and the acknowledged messages found in history are reported.
// Run with `node --experimental-websocket` (Node 20's WebSocket).
import { spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, value, index, all) => {
  if (value.startsWith("--")) pairs.push([value.slice(2), all[index + 1]]);
  return pairs;
}, []));
const nodes = (args.nodes ?? "127.0.0.1:52311,127.0.0.1:52312").split(",");
const redisPort = args["redis-port"] ?? "52302";
const timeoutMs = Number(args["timeout-ms"] ?? 2000);
const sleepSeconds = Number(args.sleep ?? 10);
const users = Number(args.users ?? 40);
const rate = Number(args.rate ?? 4);
const pauseAtMs = 5_000;
const runMs = pauseAtMs + sleepSeconds * 1000 + 8_000;
const secret = "dev-only-jwt-secret-change-me-0123456789abcdef";

const base64url = (text) => Buffer.from(text).toString("base64url");
function token(user) {
  const body = `${base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${base64url(JSON.stringify({
    sub: user, exp: Math.floor(Date.now() / 1000) + 3600 }))}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => performance.now();

class Client {
  constructor(user, node) {
    this.user = user;
    this.node = node;
    this.nextID = 1;
    this.waiting = new Map();
    this.resyncs = [];
  }

  open() {
    return new Promise((resolve, reject) => {
      this.socket = new WebSocket(`ws://${this.node}/v1/ws?token=${token(this.user)}`);
      this.socket.onopen = () => resolve();
      this.socket.onerror = (error) => reject(new Error(`${this.user}: ${error.message ?? "socket error"}`));
      this.socket.onmessage = (frame) => {
        const message = JSON.parse(frame.data);
        if (message.type === "event") {
          if (message.event === "session.resync") this.resyncs.push({ at: now(), channelIds: message.data.channelIds });
          return;
        }
        const waiter = this.waiting.get(message.id);
        if (waiter) {
          this.waiting.delete(message.id);
          waiter(message);
        }
      };
    });
  }

  request(type, fields = {}) {
    const id = this.nextID++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.socket.send(JSON.stringify({ id, type, ...fields }));
    });
  }
}

async function readyz(node) {
  try {
    const response = await fetch(`http://${node}/readyz`, { signal: AbortSignal.timeout(1000) });
    return response.status;
  } catch {
    return 0;
  }
}

// Users in pairs, one on each node, each pair in a 2-member group.
const clients = [];
for (let n = 0; n < users; n++) clients.push(new Client(`pause${n}`, nodes[n % 2]));
await Promise.all(clients.map((client) => client.open()));
const channels = [];
for (let n = 0; n < users; n += 2) {
  for (let attempt = 0; ; attempt++) {
    const reply = await clients[n].request("channel.create", { channelType: "group", name: `pause ${n}`,
                                                               userIds: [clients[n + 1].user] });
    if (reply.type === "ok") {
      channels[n] = channels[n + 1] = reply.result.id;
      break;
    }
    if (attempt > 200) throw new Error(`channel.create: ${JSON.stringify(reply)}`);
    await sleep(10);
  }
}

const sends = [];
const readyTimeline = [];
let pauseStarted = 0;
let pauseEnded = 0;
const start = now();
let stop = false;

const poller = (async () => {
  while (!stop) {
    const at = now();
    const statuses = await Promise.all(nodes.map(readyz));
    readyTimeline.push({ at, statuses });
    await sleep(100);
  }
})();

setTimeout(() => {
  pauseStarted = now();
  const child = spawn("redis-cli", ["-p", redisPort, "DEBUG", "SLEEP", String(sleepSeconds)], { stdio: "ignore" });
  child.on("exit", () => { pauseEnded = now(); });
}, pauseAtMs);

async function sender(client, index) {
  const interval = 1000 / rate;
  let next = start + (index * interval) / users;
  let n = 0;
  while (now() - start < runMs) {
    await sleep(Math.max(0, next - now()));
    next += interval;
    const record = { user: client.user, channel: channels[index], text: `${client.user} ${n++}`,
                     clientMessageId: randomUUID(), sentAt: now(), answeredAt: 0, outcome: "none" };
    sends.push(record);
    // One in flight per user, as an app's send button: the next waits for this answer.
    const reply = await client.request("message.send", { channelId: record.channel, text: record.text,
                                                         clientMessageId: record.clientMessageId });
    record.answeredAt = now();
    record.outcome = reply.type === "ok" ? "ok" : (reply.error?.code ?? "error");
    record.seq = reply.result?.seq;
  }
}
await Promise.all(clients.map(sender));
await sleep(3000);  // resync events and the last readyz turns
stop = true;
await poller;

// Every acknowledged message in history exactly once (read by the pair's other member).
let lost = 0;
let duplicated = 0;
for (let n = 0; n < users; n += 2) {
  const texts = new Map();
  let cursor = null;
  for (;;) {
    const reply = await clients[n + 1].request("message.history", cursor ? { channelId: channels[n], cursor, limit: 100 }
                                                                        : { channelId: channels[n], afterSeq: 0, limit: 100 });
    if (reply.type !== "ok") throw new Error(`history: ${JSON.stringify(reply)}`);
    for (const message of reply.result.messages) texts.set(message.text, (texts.get(message.text) ?? 0) + 1);
    cursor = reply.result.next;
    if (!cursor) break;
  }
  for (const send of sends.filter((s) => s.channel === channels[n] && s.outcome === "ok")) {
    const count = texts.get(send.text) ?? 0;
    if (count === 0) lost++;
    if (count > 1) duplicated++;
  }
}
for (const client of clients) client.socket.close();

const answered = sends.filter((s) => s.outcome !== "none");
const latencies = answered.map((s) => s.answeredAt - s.sentAt).sort((a, b) => a - b);
const during = answered.filter((s) => s.sentAt >= pauseStarted && s.sentAt <= pauseEnded);
const duringLatencies = during.map((s) => s.answeredAt - s.sentAt).sort((a, b) => a - b);
const percentile = (values, p) => values.length ? values[Math.min(values.length - 1, Math.floor(values.length * p))] : 0;
const outcomes = {};
for (const send of sends) outcomes[send.outcome] = (outcomes[send.outcome] ?? 0) + 1;
const notReady = readyTimeline.filter((r) => r.statuses.some((status) => status !== 200));
const firstNotReady = notReady.length ? notReady[0].at - pauseStarted : null;
const lastNotReady = notReady.length ? notReady[notReady.length - 1].at - pauseStarted : null;
const readyAfter = readyTimeline.filter((r) => r.at > pauseEnded + 5000).every((r) => r.statuses.every((s) => s === 200));
const readyDuring = readyTimeline.filter((r) => r.at > pauseStarted + timeoutMs + 2000 && r.at < pauseEnded - 200);
const notReadyDuring = readyDuring.length > 0 && readyDuring.every((r) => r.statuses.every((s) => s === 503));
const resynced = clients.filter((client) => client.resyncs.some((r) => r.at > pauseStarted)).length;
const maxLatency = latencies.at(-1) ?? 0;
// What a send takes with Redis answering (sends answered before the pause): the part of a
// send that is not waiting on Redis, which the command timeout comes on top of.
const before = answered.filter((s) => s.answeredAt < pauseStarted).map((s) => s.answeredAt - s.sentAt).sort((a, b) => a - b);
const beforeP99 = percentile(before, 0.99);
const slowest = answered.reduce((worst, s) => (s.answeredAt - s.sentAt > worst.answeredAt - worst.sentAt ? s : worst),
                                answered[0]);
const overTimeout = answered.filter((s) => s.answeredAt - s.sentAt > timeoutMs);
const report = {
  users, ratePerUser: rate, sleepSeconds, commandTimeoutMs: timeoutMs,
  sends: sends.length, outcomes, unanswered: sends.length - answered.length,
  latencyMs: { p50: +percentile(latencies, 0.5).toFixed(1), p99: +percentile(latencies, 0.99).toFixed(1),
               max: +maxLatency.toFixed(1) },
  latencyBeforePauseMs: { p50: +percentile(before, 0.5).toFixed(1), p99: +beforeP99.toFixed(1) },
  slowest: slowest && { latencyMs: +(slowest.answeredAt - slowest.sentAt).toFixed(1),
                        sentAfterPauseStartMs: +(slowest.sentAt - pauseStarted).toFixed(0), outcome: slowest.outcome },
  answeredAfterTimeout: overTimeout.length,
  answeredAfterTimeoutPlusP99: answered.filter((s) => s.answeredAt - s.sentAt > timeoutMs + beforeP99).length,
  sentDuringPause: during.length,
  latencyDuringPauseMs: { p50: +percentile(duringLatencies, 0.5).toFixed(1), max: +(duringLatencies.at(-1) ?? 0).toFixed(1) },
  readyz: { first503AfterPauseMs: firstNotReady && +firstNotReady.toFixed(0),
            last503AfterPauseMs: lastNotReady && +lastNotReady.toFixed(0),
            pauseMs: +(pauseEnded - pauseStarted).toFixed(0), all503DuringPause: notReadyDuring, all200After: readyAfter },
  sessionResync: { clients: resynced, of: users },
  acknowledged: outcomes.ok ?? 0, acknowledgedLost: lost, acknowledgedDuplicated: duplicated,
};
console.log(JSON.stringify(report, null, 2));
const passed = report.unanswered === 0 && maxLatency <= timeoutMs && notReadyDuring && readyAfter
  && resynced === users && lost === 0 && duplicated === 0;
console.log(passed ? "redis-pause-check: PASS" : "redis-pause-check: FAIL");
process.exit(passed ? 0 : 1);
