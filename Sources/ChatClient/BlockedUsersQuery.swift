/// Pages through the users blocked by (or blocking) the current user, the way CometChat's
/// `BlockedUsersRequest` and Sendbird's blocked-user list query do: set the filters once,
/// call `next()` until it returns nil.
public actor BlockedUsersQuery {
    public let direction: BlockDirection
    /// Users per page, 1–100.
    public let limit: Int
    /// A prefix of the id or the name, case-insensitive.
    public let search: String?
    /// Only these users.
    public let userIDs: [String]?
    private let client: ChatClient
    private var cursor: String?
    public private(set) var hasNext = true

    init(client: ChatClient, direction: BlockDirection, limit: Int, search: String?, userIDs: [String]?) {
        self.client = client
        self.direction = direction
        self.limit = limit
        self.search = search
        self.userIDs = userIDs
    }

    /// The next page; nil once the last was returned.
    public func next() async throws -> [User]? {
        guard hasNext else { return nil }
        let page = try await client.blockedUsers(direction: direction, limit: limit, search: search, userIDs: userIDs,
                                                 cursor: cursor)
        cursor = page.next
        hasNext = page.next != nil
        return page.items
    }
}
