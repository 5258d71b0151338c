// token-claims.js: reading a JWT's claims in the app (its user, its expiry), unchecked.

/** The claims of a JWT, read without checking it (only the gateway can): `sub`, `exp`, … ; null if it is not one. */
export function readTokenClaims(token) {
  const parts = String(token).trim().split(".");
  if (parts.length !== 3) return null;
  try {
    const base64 = parts[1].replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(parts[1].length / 4) * 4, "=");
    const binary = atob(base64);
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}
