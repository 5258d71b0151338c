// A real gateway for the JS SDK's tests: the release binary (`.build/release/chat-gateway`,
// or $CHAT_GATEWAY_BINARY) on a free loopback port with a throwaway data folder, the dev
// secret and admin key (Config/gateway.json), and the per-connection and per-user rates
// off. It can be stopped with SIGTERM (it drains: live connections get close 1001) and
// started again on the same port and data. Every child process is killed when the test
// process exits, whatever happened.
import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const adminKey = "dev-only-admin-key-change-me";

const children = new Set();
process.on("exit", () => {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {}
  }
});

/** The gateway binary the tests run, or a failure that says how to build it. */
export function gatewayBinary() {
  const binary = process.env.CHAT_GATEWAY_BINARY || join(repositoryRoot, ".build/release/chat-gateway");
  if (!existsSync(binary)) {
    throw new Error(`no gateway binary at ${binary}: build it with ` +
      "`swift build -c release -Xswiftc -enable-testing --product chat-gateway`, or set CHAT_GATEWAY_BINARY");
  }
  return binary;
}

/** A loopback port nothing listens on right now. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** Resolves with `value()` once it is truthy; rejects with `what` after `timeoutMs`. */
export async function waitFor(what, value, { timeoutMs = 20000, everyMs = 25 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await value();
    if (result) return result;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** `promise`, or a rejection naming `what` after `timeoutMs`. */
export function within(timeoutMs, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class LiveGateway {
  /** Starts a gateway; `settings` are extra CHAT_GATEWAY_* variables (e.g. BLOCKING_REVEALBLOCKEDBY: "true"). */
  static async start(settings = {}) {
    const gateway = new LiveGateway(await freePort(), mkdtempSync(join(tmpdir(), "chat-js-sdk-test-")), settings);
    await gateway.run();
    return gateway;
  }

  constructor(port, dataDirectory, settings) {
    this.port = port;
    this.dataDirectory = dataDirectory;
    this.settings = settings;
    this.process = null;
    this.starts = 0;
  }

  get url() {
    return `ws://127.0.0.1:${this.port}/v1/ws`;
  }

  get httpBase() {
    return `http://127.0.0.1:${this.port}`;
  }

  get logFile() {
    return join(this.dataDirectory, `gateway-${this.starts}.log`);
  }

  /** Starts the process (again) on the same port and data folder; resolves once /healthz answers. */
  async run() {
    this.starts += 1;
    const env = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith("CHAT_GATEWAY_")) delete env[name];
    Object.assign(env, {
      CHAT_GATEWAY_SERVER_HOST: "127.0.0.1",
      CHAT_GATEWAY_SERVER_PORT: String(this.port),
      CHAT_GATEWAY_STORAGE_DATADIRECTORY: this.dataDirectory,
      CHAT_GATEWAY_LIMITS_CONNECTIONREQUESTSPERSECOND: "0",
      CHAT_GATEWAY_LIMITS_USERMESSAGESPERSECOND: "0",
      CHAT_GATEWAY_SHUTDOWN_DRAINSECONDS: "1",
      CHAT_GATEWAY_LOG_LEVEL: "warning",
    });
    for (const [key, value] of Object.entries(this.settings)) env[`CHAT_GATEWAY_${key}`] = String(value);
    const log = openSync(this.logFile, "w");
    const child = spawn(gatewayBinary(), ["serve", "--config", join(repositoryRoot, "Config/gateway.json")],
      { env, stdio: ["ignore", log, log] });
    children.add(child);
    child.on("exit", () => children.delete(child));
    this.process = child;
    try {
      await waitFor(`the gateway on port ${this.port} to answer /healthz`, async () => {
        if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode} at start:\n${this.logTail()}`);
        try {
          return (await this.http("GET", "/healthz")).status === 200;
        } catch {
          return false;
        }
      });
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    }
  }

  logTail(lines = 20) {
    try {
      return readFileSync(this.logFile, "utf8").trim().split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }

  /** SIGTERM (the gateway drains: close 1001 to every connection) and waits for the exit; SIGKILL after 15 s. */
  async stop() {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15000);
    await exited;
    clearTimeout(timer);
  }

  /** Stops the gateway for good and deletes its data. */
  async dispose() {
    await this.stop();
    rmSync(this.dataDirectory, { recursive: true, force: true });
  }

  /** One admin API call: `{ status, body }`. */
  admin(method, path, body) {
    return this.http(method, path, body, { Authorization: `Bearer ${adminKey}` });
  }

  /**
   * One HTTP request on a connection of its own (`{ status, body }`, JSON parsed): a
   * kept-alive connection could outlive a gateway the tests restart, and a request sent
   * on it as the other side closes it fails.
   */
  http(method, path, body, headers = {}) {
    const payload = body === undefined ? null : JSON.stringify(body);
    return new Promise((resolveResponse, reject) => {
      const request = httpRequest({
        host: "127.0.0.1", port: this.port, path, method, agent: false, timeout: 10000,
        headers: { ...headers, Connection: "close", ...(payload ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload) } : {}) },
      }, (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => { text += chunk; });
        response.on("end", () => {
          let json = null;
          try {
            json = JSON.parse(text);
          } catch {}
          resolveResponse({ status: response.statusCode, body: json ?? text });
        });
        response.on("error", reject);
      });
      request.on("timeout", () => request.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
      request.on("error", reject);
      request.end(payload ?? undefined);
    });
  }

  /** A fresh token for `userId` (POST /v1/admin/tokens). */
  async token(userId) {
    const { status, body } = await this.admin("POST", "/v1/admin/tokens", { userId });
    if (status !== 200 || !body.token) throw new Error(`POST /v1/admin/tokens for ${userId}: ${status} ${JSON.stringify(body)}`);
    return body.token;
  }

  /** Creates (or updates) a user. */
  async createUser(id, name = id) {
    const { status, body } = await this.admin("POST", "/v1/admin/users", { id, name });
    if (status !== 200) throw new Error(`POST /v1/admin/users ${id}: ${status} ${JSON.stringify(body)}`);
  }
}

/**
 * A TCP proxy on a free loopback port in front of `port`, so a test can kill the
 * client's socket (a reset, no close frame) while the gateway stays up.
 */
export class KillableProxy {
  static async start(port) {
    const proxy = new KillableProxy(port);
    await new Promise((r) => proxy.server.listen(0, "127.0.0.1", r));
    return proxy;
  }

  constructor(targetPort) {
    this.connections = new Set();
    this.accepted = 0;
    this.requestLines = []; // the first line each client sent (its HTTP request line)
    this.server = createServer((client) => {
      this.accepted += 1;
      let head = "";
      const readRequestLine = (chunk) => {
        head += chunk.toString("latin1");
        const end = head.indexOf("\r\n");
        if (end < 0 && head.length < 8192) return;
        this.requestLines.push(end < 0 ? head : head.slice(0, end));
        client.off("data", readRequestLine);
      };
      client.on("data", readRequestLine);
      const upstream = connect(targetPort, "127.0.0.1");
      const pair = { client, upstream };
      this.connections.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      const drop = () => {
        this.connections.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on("error", drop);
      upstream.on("error", drop);
      client.on("close", drop);
      upstream.on("close", drop);
    });
  }

  url(path = "/v1/ws") {
    return `ws://127.0.0.1:${this.server.address().port}${path}`;
  }

  /** Kills every proxied connection now: a TCP reset to both sides. */
  killAll() {
    for (const { client, upstream } of [...this.connections]) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.connections.clear();
  }

  close() {
    this.killAll();
    return new Promise((r) => this.server.close(r));
  }
}
