// client-message-id.js: the ids that make a repeated `message.send` store its message once.

/** A fresh `clientMessageId`. */
export function newClientMessageId() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  return `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
}
