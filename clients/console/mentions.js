// mentions.js: `@name` in the console's composer (PROTOCOL.md §15). A mention is an `@`
// followed by a channel member's id, or by its display name with the spaces left out
// (case does not matter); the composer sends the ids it resolves as `mentionedUserIds`,
// and a message's text shows the mentions it carries highlighted.

const token = /(^|[^A-Za-z0-9_.@-])@([A-Za-z0-9_.@-]+)/g;
const maxMentions = 25; // the gateway refuses more (ERR_TOO_MANY_IDS)

/** The member ids that `text` mentions, in order, each once; at most 25. */
export function mentionedIds(text, members, nameOf) {
  const ids = [];
  for (const match of text.matchAll(token)) {
    const id = resolve(stripTrailingDots(match[2]), members, nameOf);
    if (id && !ids.includes(id)) ids.push(id);
  }
  return ids.slice(0, maxMentions);
}

/** The member `word` names (its id, or its name without spaces), or null. */
function resolve(word, members, nameOf) {
  const wanted = word.toLowerCase();
  return members.find((id) => id.toLowerCase() === wanted)
    ?? members.find((id) => (nameOf(id) || "").replace(/\s+/g, "").toLowerCase() === wanted)
    ?? null;
}

/** "@bob." at the end of a sentence names bob. */
function stripTrailingDots(word) {
  return word.replace(/[.]+$/, "");
}

/**
 * `text` as DOM nodes: plain text, with each `@word` that names one of `mentioned` as a
 * `<span class="mention">` (also `to-me` when it names `ownId`).
 */
export function textWithMentions(text, mentioned, nameOf, ownId) {
  const nodes = [];
  let last = 0;
  if (mentioned.length) {
    for (const match of text.matchAll(token)) {
      const word = stripTrailingDots(match[2]);
      const id = resolve(word, mentioned, nameOf);
      if (!id) continue;
      const start = match.index + match[1].length;
      if (start > last) nodes.push(document.createTextNode(text.slice(last, start)));
      const span = document.createElement("span");
      span.className = id === ownId ? "mention to-me" : "mention";
      span.dataset.user = id;
      span.textContent = "@" + word;
      nodes.push(span);
      last = start + 1 + word.length;
    }
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/** The `@word` being typed just before the caret, or null: `{ query, start }`. */
export function mentionAtCaret(value, caret) {
  const before = value.slice(0, caret);
  const match = /(^|[^A-Za-z0-9_.@-])@([A-Za-z0-9_.-]*)$/.exec(before);
  if (!match) return null;
  return { query: match[2].toLowerCase(), start: caret - match[2].length - 1 };
}
