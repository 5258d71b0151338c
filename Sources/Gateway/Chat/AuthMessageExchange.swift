import ChatCore
import WebSocket

/// A `/v1/ws?auth=message` connection from its upgrade to its session (PROTOCOL.md §1): the
/// client sends `{"id","type":"auth","token"}` first, within the handshake timeout. Sans-IO:
/// `AwaitingAuthSession` feeds it the connection's messages, ticks and the token's verdict,
/// and performs the actions it returns.
///
/// - Before `auth`, every other request is answered `ERR_NOT_LOGGED_IN` (one that is not a
///   request, `ERR_BAD_REQUEST`), and the connection keeps waiting; past
///   `maxRequestsBeforeAuth` of them it closes (1008): a client that never authenticates
///   gets no more of the gateway's time than the timeout allows.
/// - While the token is verified, the requests that follow it are held (up to
///   `maxHeldRequests` and `maxHeldBytes`, then `ERR_RATE_LIMITED`) and handed to the session
///   in order once it opens, so a client may pipeline behind its `auth`.
/// - A refused token closes with the refusal's close code and reason (4004, 4001, 4002,
///   4003, 4005); no `auth` by the deadline closes with 1008.
struct AuthMessageExchange {
    enum Action: Equatable {
        /// Write this reply to the client.
        case send([UInt8])
        /// Verify the token and register the session; `verdict` gets the outcome.
        case authenticate(token: String)
        /// The session is registered: from now on it has the connection. It answers the `auth`
        /// request (`me`'s result under `requestID`), then the requests held meanwhile, in order.
        case open(SessionRecord, requestID: JSONValue, held: [[UInt8]])
        case close(CloseCode, reason: String)
        /// A session was registered for a connection that is gone: release it.
        case release(SessionRecord)
    }

    private enum State {
        case awaitingAuth(requestsRefused: Int)
        case authenticating(requestID: JSONValue, held: [[UInt8]], heldBytes: Int)
        case open
        case closed
    }

    static let maxRequestsBeforeAuth = 16
    static let maxHeldRequests = 16
    static let maxHeldBytes = 64 * 1024

    private var state = State.awaitingAuth(requestsRefused: 0)
    /// The loop tick by which the `auth` message must have come.
    let deadline: UInt64
    private let timeoutSeconds: UInt64

    /// `now` is the loop tick of the upgrade; `timeoutSeconds` is `limits.handshakeTimeoutSeconds`.
    init(now: UInt64, timeoutSeconds: UInt64) {
        deadline = now + timeoutSeconds
        self.timeoutSeconds = timeoutSeconds
    }

    /// Whether the session opened (and the connection was handed to it).
    var isOpen: Bool {
        if case .open = state { return true }
        return false
    }

    mutating func received(_ text: [UInt8]) -> [Action] {
        switch state {
        case .awaitingAuth(let refused):
            switch AuthRequest.read(text) {
            case .auth(let id, let token?):
                state = .authenticating(requestID: id, held: [], heldBytes: 0)
                return [.authenticate(token: token)]
            case .auth(let id, nil):
                return refuse(ChatError(.badRequest, "auth needs a token string"), id: id, refusedBefore: refused)
            case .other(let id):
                return refuse(ChatError(.notLoggedIn, "not logged in: send {\"type\":\"auth\",\"token\":…} first"),
                              id: id, refusedBefore: refused)
            case .malformed(let id, let error):
                return refuse(error, id: id, refusedBefore: refused)
            }
        case .authenticating(let requestID, var held, let heldBytes):
            guard held.count < Self.maxHeldRequests, heldBytes + text.count <= Self.maxHeldBytes else {
                return [.send(WireEncoding.error(id: Self.id(of: text), ChatError(
                    .rateLimited, "the token is still being verified", retryAfterMs: 100)))]
            }
            held.append(text)
            state = .authenticating(requestID: requestID, held: held, heldBytes: heldBytes + text.count)
            return []
        case .open, .closed:
            return []
        }
    }

    /// The outcome of `.authenticate`.
    mutating func verdict(_ result: Result<SessionRecord, SessionRefusal>) -> [Action] {
        switch (state, result) {
        case (.authenticating(let requestID, let held, _), .success(let record)):
            state = .open
            return [.open(record, requestID: requestID, held: held)]
        case (.authenticating, .failure(let refusal)):
            state = .closed
            return [.close(refusal.closeCode, reason: refusal.closeReason)]
        case (_, .success(let record)):
            // Closed meanwhile (timeout, client gone, shutdown).
            return [.release(record)]
        case (_, .failure):
            return []
        }
    }

    /// Once a second, with the loop's tick. The deadline is for the `auth` message; once it
    /// came, the verdict is waited for as an upgrade's is (verification and the cluster-wide
    /// connection count take what they take on a loaded node, and are bounded there).
    mutating func tick(_ now: UInt64) -> [Action] {
        switch state {
        case .awaitingAuth:
            guard now >= deadline else { return [] }
            state = .closed
            return [.close(.policyViolation, reason: "ERR_NOT_LOGGED_IN: no auth within \(timeoutSeconds) s")]
        case .authenticating, .open, .closed:
            return []
        }
    }

    /// The connection closed (or never opened) before the session did.
    mutating func connectionClosed() {
        if case .open = state { return }
        state = .closed
    }

    private mutating func refuse(_ error: ChatError, id: JSONValue, refusedBefore: Int) -> [Action] {
        guard refusedBefore < Self.maxRequestsBeforeAuth else {
            state = .closed
            return [.close(.policyViolation, reason: "ERR_NOT_LOGGED_IN: \(Self.maxRequestsBeforeAuth) requests without auth")]
        }
        state = .awaitingAuth(requestsRefused: refusedBefore + 1)
        return [.send(WireEncoding.error(id: id, error))]
    }

    private static func id(of text: [UInt8]) -> JSONValue {
        switch AuthRequest.read(text) {
        case .auth(let id, _), .other(let id), .malformed(let id, _): id
        }
    }
}
