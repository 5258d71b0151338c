import ChatCore
import EventLoop
import WebSocket

extension ChatService {
    /// The upgrade's verdict: a session to attach, or the HTTP error of PROTOCOL.md §1.
    enum SessionVerdict {
        case accept(ChatSession)
        case reject(HTTPResponse)
    }

    static func reject(_ status: Int, _ error: ChatError) -> SessionVerdict {
        .reject(.error(status: status, code: error.code.rawValue, message: error.message))
    }

    /// Authenticates a `/v1/ws` upgrade and registers its session; `completion`
    /// runs on the core queue (the caller hops back to its loop).
    func openSession(_ request: HTTPRequest, loop: EventLoop, completion: @escaping @Sendable (UncheckedBox<SessionVerdict>) -> Void) {
        if !settings.allowedOrigins.isEmpty, let origin = request.header("Origin"), !settings.allowedOrigins.contains(origin) {
            completion(UncheckedBox(Self.reject(403, ChatError(.forbidden, "origin \(origin) is not allowed"))))
            return
        }
        var token = request.queryValue("token")
        if token == nil, let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer ") {
            token = String(authorization.dropFirst(7).drop(while: { $0 == " " }))
        }
        guard let token, !token.isEmpty else {
            completion(UncheckedBox(Self.reject(401, ChatError(.notLoggedIn, "token missing"))))
            return
        }
        let device = request.queryValue("device")
        let hideBlocked = request.queryValue("hideBlocked") == "1"
        let box = UncheckedBox(loop)
        Task(executorPreference: DispatchTaskExecutor.shared) { [self] in
            let verified = await tokens.verify(token)
            inbox.async { [self] in
                switch verified {
                case .failure(let error):
                    completion(UncheckedBox(Self.reject(401, error)))
                case .success(let identity):
                    completion(UncheckedBox(register(identity, device: device, hideBlocked: hideBlocked, loop: box.value)))
                }
            }
        }
    }

    private func register(_ identity: VerifiedToken, device: String?, hideBlocked: Bool, loop: EventLoop) -> SessionVerdict {
        if directory.users[identity.userID]?.deactivated == true {
            return Self.reject(403, ChatError(.forbidden, "user is deactivated"))
        }
        let live = sessions[identity.userID]?.count ?? 0
        if live >= settings.maxConnectionsPerUser {
            return Self.reject(429, ChatError(.forbidden, "user already holds \(live) live connections"))
        }
        // The token's profile and the time are kept at once and written in the background.
        var user = directory.users[identity.userID] ?? User(id: identity.userID, createdAt: clock.now())
        if let name = identity.name { user.name = name }
        if let image = identity.image { user.image = image }
        user.lastSeenAt = clock.now()
        run(engine.touchUser(user))
        lastSessionID += 1
        let session = ChatSession(id: lastSessionID, userID: user.id, userNumber: number(for: user.id), device: device,
                                  hideBlocked: hideBlocked, expiresAt: identity.expiresAt, loop: loop, service: self)
        sessions[user.id, default: []].append(session)
        sessionsByID[session.id] = session
        directory.setOnline(user.id, true)
        let channels = directory.channelIDs(of: user.id)
        let blocked = Set(directory.blocks.blocked(by: user.id).map(number(for:)))
        let blockedBy = Set(directory.blocks.blockers(of: user.id).map(number(for:)))
        if let shard = shard(for: loop) {
            let box = UncheckedBox(session)
            loop.execute {
                box.value.blocked = blocked
                box.value.blockedBy = blockedBy
                shard.register(box.value, channels: channels)
            }
        }
        return .accept(session)
    }

    /// Called on the session's loop when its connection is gone.
    func sessionClosed(_ session: ChatSession) {
        shard(for: session.loop)?.unregister(session)
        let box = UncheckedBox(session)
        inbox.async { [self] in
            let session = box.value
            sessionsByID[session.id] = nil
            sessions[session.userID]?.removeAll { $0 === session }
            if sessions[session.userID]?.isEmpty == true {
                sessions[session.userID] = nil
                directory.setOnline(session.userID, false)
                if var user = directory.users[session.userID] {
                    user.lastSeenAt = clock.now()
                    run(engine.touchUser(user))
                }
            }
        }
    }

    /// Closes every live session of `user` with `code` (core queue).
    func closeSessions(of user: UserID, code: CloseCode, reason: String) {
        for session in sessions[user] ?? [] {
            let box = UncheckedBox(session)
            session.loop.execute { box.value.close(code: code, reason: reason) }
        }
    }
}
