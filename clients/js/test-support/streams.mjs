// Bounded reads of a MessageStream for the tests: they fail with what arrived, never hang.

/** The next `count` new messages of `stream` (its "new" items; other items are skipped), or a failure after `timeoutMs`. */
export async function collect(stream, count, { timeoutMs = 60000 } = {}) {
  const items = await collectItems(stream, count, { timeoutMs, only: (item) => item.type === "new" });
  return items.map((item) => item.message);
}

/** The next `count` items of `stream` that `only` keeps (default: every item), or a failure after `timeoutMs` saying how far it got. */
export async function collectItems(stream, count, { timeoutMs = 60000, only = () => true } = {}) {
  const items = [];
  const deadline = Date.now() + timeoutMs;
  while (items.length < count) {
    const left = deadline - Date.now();
    const next = await nextWithin(stream, left);
    if (next === timedOut) {
      const last = items.at(-1);
      throw new Error(`the stream yielded ${items.length} of ${count} items in ${timeoutMs} ms ` +
        `(last: ${last ? `${last.type} ${last.message?.seq ?? last.reaction?.seq}` : "none"})`);
    }
    if (next.done) throw new Error(`the stream ended after ${items.length} of ${count} items`);
    if (only(next.value)) items.push(next.value);
  }
  return items;
}

/** What else the stream yields within `ms` (an empty list when nothing comes). */
export async function nothingMoreWithin(stream, ms) {
  const more = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const next = await nextWithin(stream, deadline - Date.now());
    if (next === timedOut || next.done) return more;
    more.push(next.value);
  }
}

const timedOut = Symbol("timed out");

// A `next()` left waiting at a timeout stays queued on the stream; the tests close the
// stream afterwards (which settles it) or give up on it.
function nextWithin(stream, ms) {
  if (!stream.pendingNext) stream.pendingNext = stream.next();
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve(timedOut), Math.max(0, ms));
  });
  return Promise.race([stream.pendingNext, timeout]).then((result) => {
    clearTimeout(timer);
    if (result !== timedOut) stream.pendingNext = null;
    return result;
  });
}
