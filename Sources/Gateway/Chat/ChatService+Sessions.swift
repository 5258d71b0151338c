import ChatCore
import Dispatch
import EventLoop
import Storage
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
        if !allowedOrigins.isEmpty, let origin = request.header("Origin"), !allowedOrigins.contains(origin) {
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
                        register(identity, options: options, loop: loop, completion: completion)
                        return
                    }
                    storeNewUser(identity, refused: { completion(.failure($0)) }) { [self] in
                        admitAcrossNodes(identity, bus: bus) { [self] entry in
                            // With an entry, Redis announces the user online to every node.
                            register(identity, options: options, loop: loop, presenceOnBus: entry != nil) { [self] verdict in
                                if case .success(let record) = verdict, let entry {
                                    connectionEntries[record.id] = (identity.userID, entry)
                                } else if let entry {
                                    bus.connections.release(user: identity.userID, entry: entry, now: clock.now()) { _ in }
                                }
                                completion(verdict)
                            }
                        } refused: { [self] in
                            completion(.failure(SessionRefusal(.tooManyConnections, ChatError(.forbidden,
                                "user already holds \(limits.maxConnectionsPerUser) live connections across the cluster"))))
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
        guard !engine.knows(identity.userID) else { return body() }
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
        bus.connections.admit(user: identity.userID, entry: entry, cap: limits.maxConnectionsPerUser, now: clock.now()) {
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

    /// Cluster mode: keeps this node's connection entries from expiring: each user's every
    /// `Self.refreshRounds` seconds, a share of the users each second, so that thousands of
    /// users are not refreshed in one burst that the bus's echoes would queue behind in Redis.
    func scheduleConnectionRefresh(round: Int = 0) {
        queue.asyncAfter(deadline: .now() + .seconds(1)) { [weak self] in
            guard let self, let bus else { return }
            let share = connectionEntries.values.filter { UInt(bitPattern: $0.user.hashValue) % Self.refreshRounds == UInt(round) }
            if !share.isEmpty { bus.connections.refresh(share, now: clock.now()) }
            if round == 0 { bus.presence.expire(now: clock.now()) }
            scheduleConnectionRefresh(round: (round + 1) % Int(Self.refreshRounds))
        }
    }

    /// Seconds between two refreshes of one user's connection entries (they live 15 s).
    static let refreshRounds: UInt = 5

    /// Gives the connection its session id (its loop and hub-shard slot) and asks the engine
    /// to admit it; `completion` runs on the core queue with the engine's verdict
    /// (`sessionOpened` / `sessionRefused`).
    private func register(_ identity: VerifiedToken, options: SessionOptions, loop: EventLoop, presenceOnBus: Bool = false,
                          completion: @escaping @Sendable (Result<SessionRecord, SessionRefusal>) -> Void) {
        guard shard(for: loop) != nil else {
            return completion(.failure(SessionRefusal(.unavailable, ChatError(.internalError, "no hub for this loop"))))
        }
        lastSessionSerial &+= 1
        let slot = freeSlots[loop.index].popLast() ?? nextSlot[loop.index]
        if slot == nextSlot[loop.index] { nextSlot[loop.index] += 1 }
        let id = SessionAddress(serial: lastSessionSerial, loopIndex: loop.index, slot: slot).id
        openings[id] = SessionOpening(user: identity.userID, options: options, expiresAt: identity.expiresAt, loop: loop,
                                      completion: completion)
        run(engine.openSession(SessionRequest(id: id, user: identity.userID, name: identity.name, image: identity.image,
                                              presenceOnBus: presenceOnBus, hideBlocked: options.hideBlocked), now: clock.now()))
    }

    /// The engine admitted the session: it is registered on its loop (queued before the
    /// verdict, and before any later hub change for the user) and its upgrade answered.
    func sessionOpened(_ id: SessionID, _ seed: SessionSeed) {
        guard let opening = openings.removeValue(forKey: id), let shard = shard(for: opening.loop) else { return }
        let record = SessionRecord(id: id, userID: opening.user, userNumber: seed.userNumber, device: opening.options.device,
                                   hideBlocked: opening.options.hideBlocked, expiresAt: opening.expiresAt,
                                   loopIndex: opening.loop.index)
        opening.loop.execute { [self] in
            shard.register(record, channels: seed.channels, blocked: seed.blocked, blockedBy: seed.blockedBy, service: self)
        }
        opening.completion(.success(record))
    }

    /// The engine refused the session: its slot is free again and its upgrade is refused.
    func sessionRefused(_ id: SessionID, _ reason: SessionRefusalReason) {
        guard let opening = openings.removeValue(forKey: id) else { return }
        freeSlots[opening.loop.index].append(SessionAddress(id).slot)
        switch reason {
        case .deactivated:
            opening.completion(.failure(SessionRefusal(.deactivated, ChatError(.forbidden, "user is deactivated"))))
        case .banned:
            opening.completion(.failure(SessionRefusal(.banned, ChatError(.forbidden, "user is banned"))))
        case .tooManyConnections(let live):
            opening.completion(.failure(SessionRefusal(.tooManyConnections,
                                                       ChatError(.forbidden, "user already holds \(live) live connections"))))
        }
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
            let wasLast = engine.sessions(of: record.userID) == [record.id]
            let entry = connectionEntries.removeValue(forKey: record.id)
            let now = clock.now()
            // With an entry, Redis announces the user offline when no node holds a
            // connection of it any more.
            run(engine.closeSession(record.id, now: now, presenceOnBus: entry != nil && bus != nil))
            guard let entry, let bus else { return }
            guard wasLast else {
                bus.connections.release(user: entry.user, entry: entry.entry, now: now) { _ in }
                return
            }
            // When Redis cannot be asked, this node says what it knows.
            bus.connections.release(user: entry.user, entry: entry.entry, now: now) { [self] released in
                guard !released else { return }
                inbox.async { [self] in run(engine.presenceUnconfirmed(record.userID, at: now)) }
            }
        }
    }

    /// Closes every live session of `user` with `code` (core queue).
    func closeSessions(of user: UserID, code: CloseCode, reason: String) {
        closeSessions(engine.sessions(of: user), code: code, reason: reason)
    }

    func closeSessions(_ sessions: [SessionID], code: CloseCode, reason: String) {
        for id in sessions {
            guard let shard = shard(at: SessionAddress(id).loopIndex) else { continue }
            shard.loop.execute { shard.session(id)?.close(code: code, reason: reason) }
        }
    }
}
