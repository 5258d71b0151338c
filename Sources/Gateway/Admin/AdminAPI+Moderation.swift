import ChatCore
import EventLoop
import Storage
import WebSocket

/// PROTOCOL.md §16 for the app's backend: app-wide bans, channel roles and bans, and the
/// flags members raised.
extension AdminAPI {
    /// `POST /v1/admin/users/{id}/ban {"shadow?","untilMs?"}`: a plain ban closes the user's
    /// connections with 4003 and refuses new ones (403); a shadow ban keeps them, and what the
    /// user produces reaches nobody else. `DELETE /v1/admin/users/{id}/ban` lifts it.
    func banUser(_ id: UserID, _ f: JSONFields?, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        try service.requireUser(id)
        let ban = try f.map { (f) throws(ChatError) in Ban(shadow: try f.bool("shadow") ?? false, untilMs: try f.time("untilMs")) }
        service.changeUser(id, .ban(ban), respond: Self.respond(respond))
    }

    /// `POST /v1/admin/channels/{id}/roles {"userId","role"}`: any role, `owner` included.
    func setRole(_ channelID: ChannelID, _ f: JSONFields, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        let user = try f.requiredString("userId")
        guard let role = ChannelRole(rawValue: try f.requiredString("role")) else {
            throw ChatError(.badRequest, "role must be owner, moderator or member")
        }
        service.changeChannel(.setRole(channelID, user, role), respond: Self.respond(respond))
    }

    /// `POST /v1/admin/channels/{id}/bans {"userId","shadow?","untilMs?"}`,
    /// `DELETE /v1/admin/channels/{id}/bans/{userId}`.
    func banFromChannel(_ channelID: ChannelID, user: UserID, _ f: JSONFields?,
                        respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        let command: ChannelCommand
        if let f {
            command = .ban(channelID, user, Ban(shadow: try f.bool("shadow") ?? false, untilMs: try f.time("untilMs")))
        } else {
            command = .unban(channelID, user)
        }
        service.changeChannel(command, respond: Self.respond(respond))
    }

    /// `DELETE /v1/admin/channels/{id}/messages/{seq}`: the backend deletes any message, as
    /// an owner may; the answer is the tombstone.
    func deleteMessage(_ channelID: ChannelID, seq text: String, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        guard let seq = Int64(text), seq >= 1 else { throw ChatError(.badRequest, "seq must be a seq of at least 1") }
        service.requestChange(.delete, channelID, seq, respond: Self.respond(respond))
    }

    /// `GET /v1/admin/flags?limit=&cursor=`: the flags in the order they were raised.
    func listFlags(query: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) throws(ChatError) {
        var limit = 20
        if let text = query.queryValue("limit") {
            guard let value = Int(text), (1...100).contains(value) else { throw ChatError(.invalidLimit, "limit must be 1 to 100") }
            limit = value
        }
        let cursors = service.engine.cursors
        var afterID: Int64?
        if let cursor = query.queryValue("cursor") {
            let fields = try cursors.open(cursor, fieldCount: 2)
            guard fields[0] == "flags", let id = Int64(fields[1]) else {
                throw ChatError(.invalidCursor, "cursor is not one this gateway issued")
            }
            afterID = id
        }
        let pageSize = limit
        service.store.flags(limit: pageSize + 1, afterID: afterID) { result in
            switch result {
            case .failure:
                respond(Self.errorResponse(ChatError(.internalError, "storage failed; retry")))
            case .success(let flags):
                let page = flags.prefix(pageSize)
                let next = flags.count > pageSize ? page.last.map { cursors.seal(["flags", String($0.id)]) } : nil
                respond(Self.ok { w in
                    w.beginObject()
                    w.key("flags")
                    w.beginArray()
                    for flag in page {
                        w.beginObject()
                        flag.writeFields(to: &w)
                        w.endObject()
                    }
                    w.endArray()
                    w.key("next"); w.string(next)
                    w.endObject()
                })
            }
        }
    }
}
