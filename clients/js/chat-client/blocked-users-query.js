// blocked-users-query.js: paging through the users a user blocked (or who block them).

/**
 * Pages through the users blocked by (or blocking) the current user, the way CometChat's
 * `BlockedUsersRequest` and Sendbird's blocked-user list query do: set the filters once,
 * call `next()` until it resolves with null. `hasNext` is false once the last page came.
 */
export class BlockedUsersQuery {
  constructor(client, { direction = "byMe", limit = 20, search, userIds } = {}) {
    this.client = client;
    this.direction = direction;
    this.limit = limit;
    this.search = search;
    this.userIds = userIds;
    this.cursor = null;
    this.hasNext = true;
  }

  /** The next page of Users; null once the last page was returned. */
  async next() {
    if (!this.hasNext) return null;
    const params = { direction: this.direction, limit: this.limit };
    if (this.search !== undefined) params.search = this.search;
    if (this.userIds !== undefined) params.userIds = this.userIds;
    if (this.cursor) params.cursor = this.cursor;
    const page = await this.client.request("user.blocked.list", params);
    this.cursor = page.next ?? null;
    this.hasNext = this.cursor !== null;
    return page.users;
  }
}
