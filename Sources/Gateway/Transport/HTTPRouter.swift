import ChatCore
import EventLoop
import Synchronization
import WebSocket

/// Decides what each HTTP request gets: a response, an upgrade to a WebSocket
/// application, or a decision that needs the chat core first.
final class HTTPRouter: Sendable {
    enum Decision {
        case respond(HTTPResponse)
        case upgrade(WebSocketHandshake.Upgrade, any WebSocketApplication)
        /// Call the closure with a completion; the decision arrives on another thread.
        case deferred(@Sendable (_ completion: @escaping @Sendable (UncheckedBox<Decision>) -> Void) -> Void)
    }

    let echoEnabled: Bool
    let metrics: GatewayMetrics
    let chat: ChatService?
    let admin: AdminAPI?
    /// Who may read `/metrics`: anyone (nil) on a loopback listener, else a bearer of the
    /// admin key or `metrics.apiKey`.
    let metricsCredential: BearerCredential?
    private let draining = Atomic<Bool>(false)

    init(echoEnabled: Bool, metrics: GatewayMetrics, metricsCredential: BearerCredential?,
         chat: ChatService? = nil, admin: AdminAPI? = nil) {
        self.echoEnabled = echoEnabled
        self.metrics = metrics
        self.metricsCredential = metricsCredential
        self.chat = chat
        self.admin = admin
    }

    /// From now on `/readyz` is 503 and new handshakes get 503.
    func startDraining() { draining.store(true, ordering: .relaxed) }

    var isDraining: Bool { draining.load(ordering: .relaxed) }

    func route(_ request: HTTPRequest, loop: EventLoop) -> Decision {
        let path = request.path
        switch path {
        case "/healthz":
            return .respond(.json(status: 200, "{\"status\":\"ok\"}"))
        case "/readyz":
            return isDraining ? .respond(.error(status: 503, code: "ERR_DRAINING", message: "gateway is draining"))
                : .respond(.json(status: 200, "{\"status\":\"ready\"}"))
        case "/metrics":
            if let metricsCredential, !metricsCredential.accepts(request) {
                return .respond(.error(status: 401, code: ErrorCode.notLoggedIn.rawValue,
                                       message: "metrics on a non-loopback listener take the admin key or metrics.apiKey"))
            }
            return .respond(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                                         body: metrics.exposition()))
        case "/v1/echo" where echoEnabled:
            return upgrade(request) { upgrade in .upgrade(upgrade, EchoApplication()) }
        case "/v1/ws" where chat != nil:
            guard let chat else { break }
            return upgrade(request) { upgrade in
                .deferred { completion in
                    chat.openSession(request, loop: loop) { verdict in
                        switch verdict.value {
                        case .accept(let session): completion(UncheckedBox(.upgrade(upgrade, session)))
                        case .reject(let response): completion(UncheckedBox(.respond(response)))
                        }
                    }
                }
            }
        default:
            if path.hasPrefix("/v1/admin/"), let admin {
                return .deferred { completion in
                    admin.handle(request) { completion(UncheckedBox(.respond($0))) }
                }
            }
        }
        return .respond(.error(status: 404, code: "ERR_NOT_FOUND", message: "no route for \(path)"))
    }

    private func upgrade(_ request: HTTPRequest, accept: (WebSocketHandshake.Upgrade) -> Decision) -> Decision {
        if isDraining {
            return .respond(.error(status: 503, code: "ERR_DRAINING", message: "gateway is draining"))
        }
        switch WebSocketHandshake.validate(request) {
        case .success(let upgrade): return accept(upgrade)
        case .failure(let rejection): return .respond(.refusedUpgrade(rejection))
        }
    }
}
