import Foundation

/// A connection to the chat gateway for an app (PROTOCOL.md): typed requests matched to
/// their replies, events as `AsyncStream`s, and the rules each app would otherwise get
/// slightly wrong by hand:
///
/// - the token never goes into the URL: it connects to `?auth=message` and sends the token as
///   its first message (PROTOCOL.md §1, v1.2), so neither the URL nor any log of it holds it;
/// - it reconnects with exponential backoff and jitter, asking the token provider again when
///   the gateway refuses the token (close 4004, or 4001 when expired) or says it is expiring;
///   a deactivated (4002) or banned (4003) user is not retried;
/// - after a reconnect (and on `session.resync`) it catches up every channel it follows with
///   `message.changes` after the last version it saw (`message.history` `afterSeq` on a gateway
///   before v1.2), so `messages(in:)` yields each message once, in `seq` order, and each
///   change it missed once;
/// - a `message.send` in flight when the connection drops is sent again with the same
///   `clientMessageId` and resolves once; requests that are safe to repeat are repeated,
///   `channel.create` (not distinct) fails with `.connectionFailed` instead;
/// - with `Options.retryRateLimited`, a send, edit, delete, reaction or flag refused with
///   `ERR_RATE_LIMITED` waits `retryAfterMs` and goes again. `ERR_SLOW_MODE` is not waited
///   out: it is the channel's rule (§16), which the app shows its user with the wait.
public actor ChatClient {
    public struct Options: Sendable {
        public var backoff = ReconnectBackoff()
        /// How long a request waits for its answer, reconnects included.
        public var requestTimeout: Duration = .seconds(30)
        /// Wait out `ERR_RATE_LIMITED` on sends, edits, deletes, reactions and flags, and go
        /// again. A send refused by the channel's slow mode (`.slowMode`, with `retryAfterMs`)
        /// is not sent again: the user is the one to wait, and may rather not send it.
        public var retryRateLimited = false
        /// The `device` label of the connection (logs, metrics).
        public var device: String?
        /// `hideBlocked=1`: hide blocked users' messages in group channels on this connection.
        public var hideBlocked = false
        /// Messages per history or changes page when catching up (1–100).
        public var historyPageSize = 100

        public init() {}
    }

    let endpoint: String
    let transport: any ChatTransport
    let tokenProvider: @Sendable () async throws -> String
    let options: Options

    private(set) var state = ConnectionState.closed
    private var connection: (any ChatTransportConnection)?
    private var token: String?
    /// The token failed or is about to: ask the provider before the next connect.
    private var tokenStale = true
    private var reconnecting: Task<Void, Never>?
    private var lastRequestID = 0
    /// The connection being opened, until its `auth` request is answered: the request's id
    /// and the open waiting for it.
    private var authenticating: (connection: any ChatTransportConnection, id: Int,
                                 continuation: CheckedContinuation<Void, any Error>)?
    var pending: [Int: PendingRequest] = [:]
    private var subscribers: [UUID: (channelID: String?, continuation: AsyncStream<ChatEvent>.Continuation)] = [:]
    var feeds: [String: ChannelFeed] = [:]
    var feedSubscribers: [String: [UUID: AsyncStream<MessageFeedItem>.Continuation]] = [:]
    var presenceFollowed: Set<String> = []
    /// The signed-in user's id, once connected (for `Message.applying(_:ownUserID:)`).
    public private(set) var userID: String?
    /// Why the gateway ended this client for good (`ChatEvent.refused`: deactivated, banned, a
    /// refused token), if it did; nil again once `connect()` is called.
    public private(set) var refusal: ChatClientError?

    /// - Parameters:
    ///   - url: the gateway's WebSocket endpoint, e.g. `wss://chat.example.com/v1/ws`.
    ///   - transport: how to open WebSockets (on Linux `WebSocketTransport` by default).
    ///   - token: returns a JWT for the user; called before the first connect and again
    ///     whenever the gateway refuses the token or warns that it expires.
    public init(url: String, transport: any ChatTransport, options: Options = Options(),
                token: @escaping @Sendable () async throws -> String) {
        endpoint = url
        self.transport = transport
        self.options = options
        tokenProvider = token
    }

    #if os(Linux)
    public init(url: String, options: Options = Options(), token: @escaping @Sendable () async throws -> String) {
        self.init(url: url, transport: WebSocketTransport(), options: options, token: token)
    }
    #endif

    // MARK: connection

    /// Connects; throws when the gateway cannot be reached or refuses the user (the client
    /// reconnects by itself only once it was connected).
    public func connect() async throws {
        guard state == .closed else { return }
        refusal = nil
        setState(.connecting)
        do {
            try await open()
        } catch {
            setState(.closed)
            throw error
        }
    }

    /// Closes the connection; requests still waiting fail with `.closed`.
    public func disconnect() {
        close(failingWith: ChatClientError(.closed, "disconnected"))
    }

    /// The gateway refused the user for good: the app hears why, then the client closes and
    /// what still waits fails with the refusal itself.
    private func refused(_ error: ChatClientError) {
        refusal = error
        publish(.refused(error))
        close(failingWith: error)
    }

    private func close(failingWith error: ChatClientError) {
        setState(.closed)
        reconnecting?.cancel()
        reconnecting = nil
        if let waiting = authenticating { authenticationFailed(waiting.id, error) }
        connection?.close()
        connection = nil
        for (_, request) in pending { request.continuation.resume(throwing: error) }
        pending = [:]
    }

    /// Where the connection stands now.
    public var connectionState: ConnectionState { state }

    private func open() async throws {
        var fetched = 0
        while true {
            if tokenStale || token == nil {
                token = try await tokenProvider()
                tokenStale = false
                fetched += 1
            }
            do {
                let opened = try await transport.connect(to: url)
                try await authenticate(opened, token: token ?? "")
                return
            } catch let error as ChatClientError where error.code == .notLoggedIn || error.code == .tokenExpired {
                // A refused token is asked for again; two fresh ones refused, the user cannot connect.
                tokenStale = true
                if fetched >= 2 { throw error }
            }
        }
    }

    /// The endpoint with `auth=message` and the connection's options; never the token.
    private var url: String {
        var query = "auth=message"
        if let device = options.device { query += "&device=" + (device.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }
        if options.hideBlocked { query += "&hideBlocked=1" }
        return endpoint + (endpoint.contains("?") ? "&" : "?") + query
    }

    /// Sends the token as the connection's first message and waits for its answer (`me`'s
    /// result): the connection is then this client's. A refusal closes the connection with a
    /// code that `AuthRefusal` turns into the error a refused upgrade would have given.
    private func authenticate(_ opened: any ChatTransportConnection, token: String) async throws {
        lastRequestID += 1
        let id = lastRequestID
        let text = String(decoding: try JSONSerialization.data(withJSONObject: ["id": id, "type": "auth", "token": token]),
                          as: UTF8.self)
        Task { await read(opened) }
        let timeout = options.requestTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.authenticationFailed(id, ChatClientError(.timedOut, "no answer to auth in time"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            authenticating = (opened, id, continuation)
            opened.send(text)
        }
    }

    /// The `auth` request `id` failed: its connection is dropped and the open throws `error`.
    private func authenticationFailed(_ id: Int, _ error: ChatClientError) {
        guard let waiting = authenticating, waiting.id == id else { return }
        authenticating = nil
        waiting.connection.close()
        waiting.continuation.resume(throwing: error)
    }

    private func connected(_ opened: any ChatTransportConnection) {
        connection = opened
        setState(.connected)
        // Requests that waited (or were cut off) go out again, oldest first.
        for id in pending.keys.sorted() { if let text = pending[id]?.text { opened.send(text) } }
        if !presenceFollowed.isEmpty {
            let users = Array(presenceFollowed)
            Task { for start in stride(from: 0, to: users.count, by: 100) {
                _ = try? await self.subscribePresence(Array(users[start..<min(start + 100, users.count)]))
            } }
        }
        for channelID in feeds.keys { catchUp(channelID) }
    }

    private func read(_ opened: any ChatTransportConnection) async {
        for await event in opened.events {
            switch event {
            case .text(let text): received(text)
            case .closed(let code, let reason): lost(opened, code: code, reason: reason)
            }
        }
        lost(opened, code: nil, reason: "connection lost")
    }

    private func lost(_ lostConnection: any ChatTransportConnection, code: Int?, reason: String) {
        if let waiting = authenticating, waiting.connection === lostConnection {
            authenticationFailed(waiting.id, AuthRefusal.error(closeCode: code, reason: reason))
            return
        }
        guard connection === lostConnection else { return }
        connection = nil
        guard state != .closed else { return }
        if code == 4002 || code == 4003 {
            // Deactivated or banned: the gateway will refuse this user; nothing is retried.
            refused(AuthRefusal.error(closeCode: code, reason: reason))
            return
        }
        if code == 4001 { tokenStale = true }
        for (id, request) in pending where !request.retriable {
            pending[id] = nil
            request.continuation.resume(throwing: ChatClientError(.connectionFailed, "the connection was lost before the answer"))
        }
        for channelID in feeds.keys { feeds[channelID]?.readFailed() }
        reconnect()
    }

    private func reconnect() {
        guard reconnecting == nil else { return }
        reconnecting = Task {
            var attempt = 1
            while !Task.isCancelled {
                setState(.reconnecting(attempt: attempt))
                try? await Task.sleep(for: options.backoff.delay(attempt: attempt, unit: Double.random(in: 0...1)))
                if Task.isCancelled || state == .closed { break }
                do {
                    try await open()
                    break
                } catch let error as ChatClientError where error.code == .notLoggedIn || error.code == .tokenExpired
                    || (error.code == .handshakeRefused && error.status == 403) {
                    refused(error)
                    break
                } catch {
                    attempt += 1
                }
            }
            reconnecting = nil
        }
    }

    private func setState(_ new: ConnectionState) {
        guard state != new else { return }
        state = new
        publish(.connection(new))
    }

    // MARK: requests

    struct PendingRequest {
        /// The request as sent, its id included.
        var text: String
        var retriable: Bool
        var continuation: CheckedContinuation<Data, any Error>
    }

    /// Sends a request and waits for its answer's `result` (as JSON). `retriable` requests are
    /// sent again after a reconnect.
    func request(_ type: String, _ params: [String: any Sendable] = [:], retriable: Bool = true) async throws -> Data {
        guard state != .closed else { throw ChatClientError(.closed, "not connected") }
        lastRequestID += 1
        let id = lastRequestID
        var frame: [String: Any] = [:]
        for (key, value) in params { frame[key] = (value as? Unchecked)?.value ?? value }
        frame["id"] = id
        frame["type"] = type
        let text = String(decoding: try JSONSerialization.data(withJSONObject: frame), as: UTF8.self)
        let timeout = options.requestTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.timedOut(id)
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            pending[id] = PendingRequest(text: text, retriable: retriable, continuation: continuation)
            connection?.send(text)
        }
    }

    private func timedOut(_ id: Int) {
        pending.removeValue(forKey: id)?.continuation.resume(throwing: ChatClientError(.timedOut, "no answer in time"))
    }

    private func received(_ text: String) {
        let data = Data(text.utf8)
        guard let frame = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        switch frame["type"] as? String {
        case "event":
            event(named: frame["event"] as? String ?? "", data: frame["data"])
        case "ok":
            if let waiting = authenticating, frame["id"] as? Int == waiting.id {
                // The session is open: the connection is this client's from here on. The answer
                // is `me`'s: whose reactions are this user's own.
                authenticating = nil
                if let user = (frame["result"] as? [String: Any])?["user"] as? [String: Any] { userID = user["id"] as? String }
                connected(waiting.connection)
                waiting.continuation.resume()
                return
            }
            guard let id = frame["id"] as? Int, let request = pending.removeValue(forKey: id) else { return }
            let result = (try? JSONSerialization.data(withJSONObject: frame["result"] ?? [:], options: .fragmentsAllowed)) ?? Data()
            request.continuation.resume(returning: result)
        case "error":
            let body = frame["error"] as? [String: Any] ?? [:]
            let error = ChatClientError(ChatClientError.Code(wire: body["code"] as? String ?? ""),
                                        body["message"] as? String ?? "", retryAfterMs: body["retryAfterMs"] as? Int)
            if let waiting = authenticating, frame["id"] as? Int == waiting.id {
                authenticationFailed(waiting.id, error)
                return
            }
            guard let id = frame["id"] as? Int, let request = pending.removeValue(forKey: id) else { return }
            request.continuation.resume(throwing: error)
        default:
            break
        }
    }

    // MARK: events

    /// Every event, as it arrives, until the stream's consumer stops.
    public func events() -> AsyncStream<ChatEvent> { subscribe(channelID: nil) }

    /// The events about one channel (messages, updates, typing, read marks).
    public func events(in channelID: String) -> AsyncStream<ChatEvent> { subscribe(channelID: channelID) }

    private func subscribe(channelID: String?) -> AsyncStream<ChatEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChatEvent.self, bufferingPolicy: .bufferingNewest(10_000))
        let key = UUID()
        subscribers[key] = (channelID, continuation)
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(key) } }
        return stream
    }

    private func unsubscribe(_ key: UUID) { subscribers[key] = nil }

    func publish(_ event: ChatEvent) {
        let channel = event.channelId
        for (_, subscriber) in subscribers where subscriber.channelID == nil || subscriber.channelID == channel {
            subscriber.continuation.yield(event)
        }
    }

    private func event(named name: String, data: Any?) {
        let json = (try? JSONSerialization.data(withJSONObject: data ?? [:], options: .fragmentsAllowed)) ?? Data()
        let object = data as? [String: Any] ?? [:]
        let decoder = JSONDecoder()
        switch name {
        case "message.new":
            guard let message = try? decoder.decode(Message.self, from: json) else { return }
            publish(.message(message))
            feed(message, live: true)
        case "message.updated":
            guard let updated = try? decoder.decode(MessageUpdatedEvent.self, from: json) else { return }
            publish(.messageUpdated(updated.message, change: MessageChange(wire: updated.change)))
            feed(updated: updated.message, live: true)
        case "reaction.added", "reaction.removed":
            guard let reaction = try? decoder.decode(ReactionEventData.self, from: json) else { return }
            let update = ReactionUpdate(channelId: reaction.channelId, seq: reaction.seq, userId: reaction.userId,
                                        kind: reaction.kind, reactions: reaction.reactions, added: name == "reaction.added")
            publish(.reaction(update))
            feed(update)
        case "channel.updated":
            if let channel = try? decoder.decode(Channel.self, from: json) { publish(.channelUpdated(channel)) }
        case "user.blocked", "user.unblocked":
            let user = object["userId"] as? String ?? ""
            publish(name == "user.blocked" ? .userBlocked(userId: user) : .userUnblocked(userId: user))
        case "session.expiring":
            tokenStale = true
            publish(.sessionExpiring(expiresAt: (object["expiresAt"] as? NSNumber)?.int64Value ?? 0))
        case "typing.start", "typing.stop":
            publish(.typing(channelId: object["channelId"] as? String ?? "", userId: object["userId"] as? String ?? "",
                            started: name == "typing.start"))
        case "typing.users":
            publish(.typingUsers(channelId: object["channelId"] as? String ?? "", userIds: object["userIds"] as? [String] ?? [],
                                 count: (object["count"] as? NSNumber)?.intValue ?? 0))
        case "channel.read":
            publish(.channelRead(channelId: object["channelId"] as? String ?? "", userId: object["userId"] as? String ?? "",
                                 lastReadSeq: (object["lastReadSeq"] as? NSNumber)?.int64Value ?? 0))
        case "user.presence":
            if let presence = try? decoder.decode(Presence.self, from: json) { publish(.presence(presence)) }
        case "session.resync":
            let channels = object["channelIds"] as? [String] ?? []
            publish(.sessionResync(channelIds: channels))
            for channel in channels where feeds[channel] != nil { catchUp(channel) }
        default:
            publish(.other(name: name, data: String(decoding: json, as: UTF8.self)))
        }
    }
}
