import ChatCore
import EventLoop
import Storage
import WebSocket

/// PROTOCOL.md §10: the app backend's API, `Authorization: Bearer <admin.apiKey>`.
/// Handlers decide on the chat core's queue and answer through `respond`.
struct AdminAPI: Sendable {
    let service: ChatService
    let credential: BearerCredential

    init(service: ChatService, apiKey: String) {
        self.service = service
        credential = BearerCredential([apiKey])
    }

    func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let query = request
        guard credential.accepts(request) else {
            respond(.error(status: 401, code: ErrorCode.notLoggedIn.rawValue, message: "admin API key required"))
            return
        }
        let parts = request.path.split(separator: "/").map(String.init)  // ["v1","admin",...]
        let route = Array(parts.dropFirst(2))
        let body: JSONObject
        if request.body.isEmpty {
            body = JSONObject()
        } else if case .object(let object)? = try? JSONParser.parse(request.body) {
            body = object
        } else {
            respond(.error(status: 400, code: ErrorCode.badRequest.rawValue, message: "body must be a JSON object"))
            return
        }
        // The users the call names (its path's and its body's), known on this node first.
        var named = route.first == "users" ? Array(route.dropFirst().prefix(1)) + route.dropFirst(3).prefix(1) : []
        if route.first == "channels", route.count == 4, route[2] == "bans" { named.append(route[3]) }
        if let ids = try? JSONFields(object: body).stringArray("userIds") { named += ids.prefix(1000) }
        if let id = try? JSONFields(object: body).string("userId") { named.append(id) }
        service.inbox.async { [service, named] in
            service.withKnownUsers(named) {
                do throws(ChatError) {
                    try dispatch(request.method, route, body, query: query, respond: respond)
                } catch {
                    respond(Self.errorResponse(error))
                }
            }
        }
    }

    static func errorResponse(_ error: ChatError) -> HTTPResponse {
        let status: Int
        switch error.code {
        case .userNotFound, .channelNotFound: status = 404
        case .forbidden: status = 403
        case .internalError: status = 500
        default: status = 400
        }
        return .error(status: status, code: error.code.rawValue, message: error.message)
    }

    static func ok(_ write: (inout JSONWriter) -> Void) -> HTTPResponse {
        var w = JSONWriter()
        write(&w)
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: w.bytes)
    }

    private func dispatch(_ method: String, _ route: [String], _ body: JSONObject, query: HTTPRequest,
                          respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        let fields = JSONFields(object: body)
        switch (method, route.count, route.first) {
        case ("POST", 3, "users") where route[2] == "blocks":
            try setBlocks(route[1], targets: fields.stringArray("userIds") ?? [], isBlocked: true, respond: respond)
        case ("DELETE", 4, "users") where route[2] == "blocks":
            try setBlocks(route[1], targets: [route[3]], isBlocked: false, respond: respond)
        case ("GET", 3, "users") where route[2] == "blocks":
            try listBlocks(route[1], query: query, respond: respond)
        case ("POST", 1, "users"):
            try createUser(fields, respond: respond)
        case ("POST", 3, "users") where route[2] == "deactivate":
            try deactivate(route[1], respond: respond)
        case ("POST", 1, "tokens"):
            try issueToken(fields, respond: respond)
        case ("POST", 1, "channels"):
            try createChannel(fields, respond: respond)
        case ("POST", 2, "channels"):
            try updateChannel(route[1], fields, respond: respond)
        case ("POST", 3, "users") where route[2] == "ban":
            try banUser(route[1], fields, respond: respond)
        case ("DELETE", 3, "users") where route[2] == "ban":
            try banUser(route[1], nil, respond: respond)
        case ("POST", 3, "channels") where route[2] == "roles":
            try setRole(route[1], fields, respond: respond)
        case ("POST", 3, "channels") where route[2] == "bans":
            try banFromChannel(route[1], user: try fields.requiredString("userId"), fields, respond: respond)
        case ("DELETE", 4, "channels") where route[2] == "bans":
            try banFromChannel(route[1], user: route[3], nil, respond: respond)
        case ("DELETE", 4, "channels") where route[2] == "messages":
            try deleteMessage(route[1], seq: route[3], respond: respond)
        case ("GET", 1, "flags"):
            try listFlags(query: query, respond: respond)
        default:
            respond(.error(status: 404, code: "ERR_NOT_FOUND", message: "no admin route \(method) /\(route.joined(separator: "/"))"))
        }
    }

    private func createUser(_ f: JSONFields, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        let id = try f.requiredString("id")
        guard TokenAuthority.isValidUserID(id) else {
            throw ChatError(.badRequest, "id must be 1-128 characters of [A-Za-z0-9_.@-]")
        }
        let change = UserChange.profile(name: try f.string("name"), image: try f.string("image"),
                                        metadata: try f.stringMap("metadata"))
        service.changeUser(id, change, respond: Self.respond(respond))
    }

    private func deactivate(_ id: UserID, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        try service.requireUser(id)
        service.changeUser(id, .deactivate, respond: Self.respond(respond))
    }

    private func issueToken(_ f: JSONFields, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        let userID = try f.requiredString("userId")
        guard TokenAuthority.isValidUserID(userID) else {
            throw ChatError(.badRequest, "userId must be 1-128 characters of [A-Za-z0-9_.@-]")
        }
        let ttl = try f.int("ttlSeconds") ?? 3600
        guard (1...TokenAuthority.maximumTTLSeconds).contains(ttl) else {
            throw ChatError(.badRequest, "ttlSeconds must be 1 to \(TokenAuthority.maximumTTLSeconds)")
        }
        let tokens = service.tokens
        Task(executorPreference: DispatchTaskExecutor.shared) {
            do {
                let issued = try await tokens.issue(userID: userID, ttlSeconds: ttl)
                respond(Self.ok { w in
                    w.beginObject()
                    w.key("token"); w.string(issued.token)
                    w.key("expiresAt"); w.int(issued.expiresAt)
                    w.endObject()
                })
            } catch {
                respond(Self.errorResponse(ChatError(.internalError, "cannot sign token")))
            }
        }
    }

    private func createChannel(_ f: JSONFields, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        guard let type = ChannelType(rawValue: try f.requiredString("type")) else {
            throw ChatError(.badRequest, "type must be group or open")
        }
        let command = ChannelCommand.define(
            try f.string("id"), type: type, members: try f.stringArray("userIds") ?? [], name: try f.string("name") ?? "",
            distinct: try f.bool("distinct") ?? false, pushFromBlockedUsers: try f.bool("pushFromBlockedUsers") ?? false)
        service.changeChannel(command, respond: Self.respond(respond))
    }

    /// The HTTP answer to the engine's reply.
    static func respond(_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> @Sendable (EngineReply) -> Void {
        { reply in
            switch reply {
            case .result(let json): respond(Self.ok { $0.raw(bytes: json) })
            case .blockResults(let results): respond(Self.ok { ChatService.writeResults(results, to: &$0) })
            case .failure(let error): respond(Self.errorResponse(error))
            }
        }
    }
}

extension AdminAPI {
    /// `POST /v1/admin/channels/{id} {"name?","pushFromBlockedUsers?","frozen?","slowModeSeconds?"}`:
    /// the backend may change any channel's options, including `pushFromBlockedUsers`, which
    /// members other than the creator may not, and the moderators' freeze and slow mode.
    func updateChannel(_ id: ChannelID, _ f: JSONFields, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        var slowMode: Int?
        if let seconds = try f.int("slowModeSeconds") {
            guard seconds >= 0, seconds <= Int64(ChatEngine.maxSlowModeSeconds) else {
                throw ChatError(.badRequest, "slowModeSeconds must be 0 to \(ChatEngine.maxSlowModeSeconds)")
            }
            slowMode = Int(seconds)
        }
        let command = ChannelCommand.update(id, name: try f.string("name"), pushFromBlockedUsers: try f.bool("pushFromBlockedUsers"),
                                            frozen: try f.bool("frozen"), slowModeSeconds: slowMode)
        service.changeChannel(command, respond: Self.respond(respond))
    }

    /// `POST /v1/admin/users/{id}/blocks {"userIds"}`, `DELETE /v1/admin/users/{id}/blocks/{target}`.
    func setBlocks(_ user: UserID, targets: [UserID], isBlocked: Bool,
                   respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        try service.requireUser(user)
        guard !targets.isEmpty else { throw ChatError(.badRequest, "userIds must list 1 to 100 users") }
        guard targets.count <= 100 else { throw ChatError(.tooManyIDs, "userIds holds more than 100 ids") }
        service.setBlocks(blocker: user, targets: targets, isBlocked: isBlocked, respond: Self.respond(respond))
    }

    /// `GET /v1/admin/users/{id}/blocks?direction=&limit=&cursor=` (every direction is open to the backend).
    func listBlocks(_ user: UserID, query: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        try service.requireUser(user)
        guard let direction = BlockDirection(rawValue: query.queryValue("direction") ?? "byMe") else {
            throw ChatError(.badRequest, "direction must be byMe, me or both")
        }
        var limit = 20
        if let text = query.queryValue("limit") {
            guard let value = Int(text), (1...100).contains(value) else { throw ChatError(.invalidLimit, "limit must be 1 to 100") }
            limit = value
        }
        let page = try service.blockedUsers(of: user, direction: direction, limit: limit, search: query.queryValue("search"),
                                                   userIDs: nil, cursor: query.queryValue("cursor"), revealed: true)
        respond(Self.ok { $0.raw(bytes: page) })
    }
}
