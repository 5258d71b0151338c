// keep-alive.js: noticing a connection that died without closing. Every third of the
// period it checks when something last arrived; after a whole period of silence it asks
// for a probe (a request whose missing answer shows the connection is dead).

export class KeepAlive {
  /** `periodMs`: how long without anything received before a probe (0: never). */
  constructor(periodMs) {
    this.periodMs = periodMs;
    this.timer = null;
    this.lastReceivedAt = 0;
  }

  /** How long a probe may wait for its answer. */
  get probeTimeoutMs() {
    return Math.max(5000, this.periodMs / 3);
  }

  /** Something arrived: the connection is alive. */
  received() {
    this.lastReceivedAt = Date.now();
  }

  /** A connection opened: counts from now, and calls `probe()` at each check that finds it silent for a period. */
  start(probe) {
    this.received();
    this.stop();
    const period = this.periodMs;
    if (!period) return;
    this.timer = setInterval(() => {
      if (Date.now() - this.lastReceivedAt < period) return;
      probe();
    }, Math.max(1000, period / 3));
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }
}
