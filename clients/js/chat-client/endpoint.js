// endpoint.js: the gateway's WebSocket address for a page the gateway served.

/** The WebSocket endpoint of the gateway that served `location` (a page's `window.location`). */
export function endpointFor(location, path = "/v1/ws") {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}
