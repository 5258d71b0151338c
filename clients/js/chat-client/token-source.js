// token-source.js: where a client's JWT comes from. A fixed token, or a function that is
// asked again once the token is stale: after `session.expiring`, a 4001 close, or a
// refused token.

export class TokenSource {
  /** `token`: a JWT, or a function returning one (or a promise of one). */
  constructor(token) {
    this.provider = typeof token === "function" ? token : () => token;
    this.canRefresh = typeof token === "function";
    this.token = null;
    this.stale = true; // ask the provider before the next connect
  }

  /** Whether the next connect must ask the provider first. */
  get needsRefresh() {
    return this.stale || this.token === null;
  }

  /** The next connect asks the provider again. */
  markStale() {
    this.stale = true;
  }

  /** Asks the provider; rejects with what it throws (the token and its staleness stay as they were). */
  async refresh() {
    this.token = await this.provider();
    this.stale = false;
  }
}
