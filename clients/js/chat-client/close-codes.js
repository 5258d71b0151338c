// close-codes.js: the close codes with which the gateway refuses a connection
// (PROTOCOL.md §1) and what the client makes of each: worth a fresh token, final for
// this user, or retried with backoff.

export const tokenExpiredCloseCode = 4001;
export const deactivatedCloseCode = 4002;
export const bannedCloseCode = 4003;
export const unauthorizedCloseCode = 4004;
export const tooManyConnectionsCloseCode = 4005;

/** A refused or expired token: worth one fresh token from the provider. */
export const isTokenRefusal = (code) => code === unauthorizedCloseCode || code === tokenExpiredCloseCode;
/** The gateway will refuse this user whatever the token: nothing is retried. */
export const isUserRefusal = (code) => code === deactivatedCloseCode || code === bannedCloseCode;

/** The §11 code a refusal's close reason starts with ("ERR_NOT_LOGGED_IN: …"), else one for its close code. */
export function refusalCode(closeCode, reason) {
  const named = /^(ERR_[A-Z_]+)/.exec(reason || "");
  if (named) return named[1];
  if (closeCode === unauthorizedCloseCode) return "ERR_NOT_LOGGED_IN";
  if (closeCode === tokenExpiredCloseCode) return "ERR_TOKEN_EXPIRED";
  if (isUserRefusal(closeCode) || closeCode === tooManyConnectionsCloseCode) return "ERR_FORBIDDEN";
  return "ERR_CONNECT_FAILED";
}
