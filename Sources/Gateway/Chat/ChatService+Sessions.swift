import ChatCore
import Dispatch
import EventLoop
import WebSocket

extension ChatService {
    /// The upgrade's verdict: a session registered on its loop, the HTTP error of PROTOCOL.md §1,
    /// or (`?auth=message` without a token) an upgrade whose token comes in its first message.
    enum SessionVerdict: Sendable {
        case accept(SessionRecord)
        case reject(HTTPResponse)
        case awaitAuthMessage(SessionOptions)
    }

    /// What a connection asks for besides its user (§1 query parameters).
    struct SessionOptions: Sendable, Equatable {
        var device: String?
        var hideBlocked: Bool
    }

    static func reject(_ status: Int, _ error: ChatError) -> SessionVerdict {
        .reject(.error(status: status, code: error.code.rawValue, message: error.message))
    }

    /// Judges a `/v1/ws` upgrade: its Origin, then its token (`?token=` or `Authorization:
    /// Bearer`). A token is verified and its session registered, and `completion` runs on the
    /// core queue (the caller hops back to its loop); without one, `?auth=message` is answered at
    /// once (the token follows the upgrade), anything else is 401.
    func openSession(_ request: HTTPRequest, loop: EventLoop, completion: @escaping @Sendable (SessionVerdict) -> Void) {
        if !settings.allowedOrigins.isEmpty, let origin = request.header("Origin"), !settings.allowedOrigins.contains(origin) {
            completion(Self.reject(403, ChatError(.forbidden, "origin \(origin) is not allowed")))
            return
        }
        var token = request.queryValue("token")
        if token == nil, let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer ") {
            token = String(authorization.dropFirst(7).drop(while: { $0 == " " }))
        }
        let options = SessionOptions(device: request.queryValue("device"), hideBlocked: request.queryValue("hideBlocked") == "1")
        guard let token, !token.isEmpty else {
            if request.queryValue("auth") == "message" {
                completion(.awaitAuthMessage(options))
            } else {
                completion(Self.reject(401, ChatError(.notLoggedIn, "token missing")))
            }
            return
        }
        authenticate(token, options: options, loop: loop) { result in
            switch result {
            case .success(let record): completion(.accept(record))
            case .failure(let refusal): completion(.reject(refusal.httpResponse))
            }
        }
    }

    /// Verifies `token` and registers a session for its user on `loop`, or says why not;
    /// `completion` runs on the core queue. The upgrade and the `auth` message both come here,
    /// so a session is the same whichever way its token came.
    func authenticate(_ token: String, options: SessionOptions, loop: EventLoop,
                      completion: @escaping @Sendable (Result<SessionRecord, SessionRefusal>) -> Void) {
        Task(executorPreference: DispatchTaskExecutor.shared) { [self] in
            let verified = await tokens.verify(token)
            inbox.async { [self] in
                switch verified {
                case .failure(let error):
                    completion(.failure(SessionRefusal(token: error)))
                case .success(let identity):
                    guard let bus else {
                        completion(register(identity, options: options, loop: loop))
                        return
                    }
                    storeNewUser(identity, refused: { completion(.failure($0)) }) { [self] in
                        admitAcrossNodes(identity, bus: bus) { [self] entry in
                            // With an entry, Redis announces the user online to every node.
                            let verdict = register(identity, options: options, loop: loop, presenceOnBus: entry != nil)
                            if case .success(let record) = verdict, let entry {
                                connectionEntries[record.id] = (identity.userID, entry)
                            } else if let entry {
                                bus.releaseConnection(user: identity.userID, entry: entry, now: clock.now()) { _ in }
                            }
                            completion(verdict)
                        } refused: { [self] in
                            completion(.failure(SessionRefusal(.tooManyConnections, ChatError(.forbidden,
                                "user already holds \(settings.maxConnectionsPerUser) live connections across the cluster"))))
                        }
                    }
                }
            }
        }
    }

    /// Cluster mode: a user connecting for the first time is stored before its upgrade is
    /// answered, so that a request naming it on another node right after finds it in the
    /// store (`withKnownUsers`). A user this node knows goes on at once.
    private func storeNewUser(_ identity: VerifiedToken, refused: @escaping @Sendable (SessionRefusal) -> Void,
                              then body: @escaping @Sendable () -> Void) {
        guard directory.users[identity.userID] == nil else { return body() }
        let stored = adminCall { reply in
            if case .failure = reply {
                refused(SessionRefusal(.unavailable, ChatError(.internalError, "storage failed; retry")))
            } else {
                body()
            }
        }
        run(engine.changeUser(identity.userID, .profile(name: identity.name, image: identity.image, metadata: nil), for: stored,
                              now: clock.now()))
    }

    /// Cluster mode: the connection cap counts every node (PROTOCOL.md §6, §13). `admitted`
    /// gets the connection's entry (nil when Redis could not answer: this node's own count
    /// decides alone); both run on the core queue.
    private func admitAcrossNodes(_ identity: VerifiedToken, bus: ClusterBus,
                                  admitted: @escaping @Sendable (String?) -> Void, refused: @escaping @Sendable () -> Void) {
        lastConnectionEntry &+= 1
        let entry = bus.nodeID + ":" + String(lastConnectionEntry)
        bus.admitConnection(user: identity.userID, entry: entry, cap: settings.maxConnectionsPerUser, now: clock.now()) {
            [self] decision in
            inbox.async {
                switch decision {
                case true?: admitted(entry)
                case false?: refused()
                case nil: admitted(nil)
                }
            }
        }
    }

    /// Cluster mode: keeps this node's connection entries from expiring, every 5 s.
    func scheduleConnectionRefresh() {
        queue.asyncAfter(deadline: .now() + .seconds(5)) { [weak self] in
            guard let self, let bus else { return }
            bus.refreshConnections(Array(connectionEntries.values), now: clock.now())
            bus.expirePresence(now: clock.now())
            scheduleConnectionRefresh()
        }
    }

    private func register(_ identity: VerifiedToken, options: SessionOptions, loop: EventLoop,
                          presenceOnBus: Bool = false) -> Result<SessionRecord, SessionRefusal> {
        if directory.users[identity.userID]?.deactivated == true {
            return .failure(SessionRefusal(.deactivated, ChatError(.forbidden, "user is deactivated")))
        }
        let live = sessions[identity.userID]?.count ?? 0
        if live >= settings.maxConnectionsPerUser {
            return .failure(SessionRefusal(.tooManyConnections, ChatError(.forbidden, "user already holds \(live) live connections")))
        }
        guard let shard = shard(for: loop) else {
            return .failure(SessionRefusal(.unavailable, ChatError(.internalError, "no hub for this loop")))
        }
        // The token's profile and the time are kept at once and written in the background.
        var user = directory.users[identity.userID] ?? User(id: identity.userID, createdAt: clock.now())
        if let name = identity.name { user.name = name }
        if let image = identity.image { user.image = image }
        user.lastSeenAt = clock.now()
        run(engine.touchUser(user))
        lastSessionSerial &+= 1
        let slot = freeSlots[loop.index].popLast() ?? nextSlot[loop.index]
        if slot == nextSlot[loop.index] { nextSlot[loop.index] += 1 }
        let address = SessionAddress(serial: lastSessionSerial, loopIndex: loop.index, slot: slot)
        let record = SessionRecord(id: address.id, userID: user.id, userNumber: number(for: user.id), device: options.device,
                                   hideBlocked: options.hideBlocked, expiresAt: identity.expiresAt, loopIndex: loop.index)
        sessions[user.id, default: []].append(record)
        if !presenceOnBus { run(engine.presenceChanged(user.id, online: true, at: clock.now())) }
        let channels = directory.channelIDs(of: user.id)
        let blocked = Set(directory.blocks.blocked(by: user.id).map(number(for:)))
        let blockedBy = Set(directory.blocks.blockers(of: user.id).map(number(for:)))
        // Queued on the loop before the verdict, and before any later hub change for the user.
        loop.execute { [self] in
            shard.register(record, channels: channels, blocked: blocked, blockedBy: blockedBy, service: self)
        }
        return .success(record)
    }

    /// The session the core registered on `loop`, for the upgrade (call on the loop).
    func registeredSession(_ record: SessionRecord, on loop: EventLoop) -> ChatSession? {
        shard(for: loop)?.session(record.id)
    }

    /// Called on the session's loop when its connection is gone (or never opened).
    func sessionClosed(_ session: ChatSession) {
        shard(for: session.loop)?.unregister(session)
        let record = session.record
        inbox.async { [self] in
            // The loop unregistered the session before this ran: its slot is free for reuse.
            freeSlots[record.loopIndex].append(SessionAddress(record.id).slot)
            engine.presenceSessionClosed(record.id)
            reportCounters()
            let entry = connectionEntries.removeValue(forKey: record.id)
            sessions[record.userID]?.removeAll { $0.id == record.id }
            guard sessions[record.userID]?.isEmpty == true else {
                if let entry { bus?.releaseConnection(user: entry.user, entry: entry.entry, now: clock.now()) { _ in } }
                return
            }
            sessions[record.userID] = nil
            let now = clock.now()
            if var user = directory.users[record.userID] {
                user.lastSeenAt = now
                run(engine.touchUser(user))
            }
            guard let entry, let bus else {
                run(engine.presenceChanged(record.userID, online: false, at: now))
                return
            }
            // Redis announces the user offline when no node holds a connection of it any more;
            // when Redis cannot be asked, this node says what it knows.
            bus.releaseConnection(user: entry.user, entry: entry.entry, now: now) { [self] released in
                guard !released else { return }
                inbox.async { [self] in
                    if sessions[record.userID] == nil { run(engine.presenceChanged(record.userID, online: false, at: now)) }
                }
            }
        }
    }

    /// Closes every live session of `user` with `code` (core queue).
    func closeSessions(of user: UserID, code: CloseCode, reason: String) {
        for record in sessions[user] ?? [] {
            guard let shard = shard(at: record.loopIndex) else { continue }
            let id = record.id
            shard.loop.execute { shard.session(id)?.close(code: code, reason: reason) }
        }
    }
}
