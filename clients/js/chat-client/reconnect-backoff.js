// reconnect-backoff.js: how long a client waits before each reconnect attempt.

/**
 * The delay before reconnect attempt `attempt` (from 1): exponential from `baseMs` up to
 * `maxMs`, with jitter (a draw `unit` in 0…1 picks between half of that and all of it), so
 * a gateway restart does not see every client come back in the same instant.
 */
export function reconnectDelay(attempt, unit = Math.random(), { baseMs = 250, maxMs = 30000 } = {}) {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const ceiling = Math.min(baseMs * 2 ** exponent, maxMs);
  return ceiling * (0.5 + 0.5 * Math.min(Math.max(unit, 0), 1));
}
