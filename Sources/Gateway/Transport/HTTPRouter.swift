import ChatCore
import EventLoop
import Synchronization
import WebSocket
import WebSocketDriver

/// Decides what each HTTP request gets: a response, an upgrade to a WebSocket
/// application, or a decision that needs the chat core first.
final class HTTPRouter: Sendable {
    enum Decision {
        case respond(HTTPResponse)
        case upgrade(WebSocketHandshake.Upgrade, any WebSocketApplication)
        /// Call the closure with a completion; the decision arrives on another thread.
        case deferred(@Sendable (_ completion: @escaping @Sendable (DeferredDecision) -> Void) -> Void)
    }

    /// A decision reached off the loop: a value that crosses back to it.
    enum DeferredDecision: Sendable {
        case respond(HTTPResponse)
        /// Upgrade to the application `open` hands out on the connection's loop (nil: none).
        case upgrade(WebSocketHandshake.Upgrade, open: @Sendable (EventLoop) -> (any WebSocketApplication)?)

        /// The decision as the loop acts on it.
        func opened(on loop: EventLoop) -> Decision {
            switch self {
            case .respond(let response):
                return .respond(response)
            case .upgrade(let upgrade, let open):
                guard let application = open(loop) else {
                    return .respond(.error(status: 503, code: ErrorCode.internalError.rawValue, message: "session unavailable"))
                }
                return .upgrade(upgrade, application)
            }
        }
    }

    let echoEnabled: Bool
    let metrics: GatewayMetrics
    let chat: ChatService?
    /// Seconds a `/v1/ws?auth=message` connection has for its `auth` message (the handshake timeout).
    let authMessageTimeout: UInt64
    let admin: AdminAPI?
    /// Who may read `/metrics`: anyone (nil) on a loopback listener, else a bearer of the
    /// admin key or `metrics.apiKey`.
    let metricsCredential: BearerCredential?
    /// The shared services `/readyz` waits for (none on SQLite).
    let dependencies: DependencyWatch?
    /// `/console` (nil: `console.enabled` is false, or no chat core to talk to).
    let console: WebConsole?
    private let draining = Atomic<Bool>(false)

    init(echoEnabled: Bool, metrics: GatewayMetrics, metricsCredential: BearerCredential?,
         chat: ChatService? = nil, authMessageTimeout: UInt64 = TransportSettings.Timeouts().handshake, admin: AdminAPI? = nil, dependencies: DependencyWatch? = nil,
         console: WebConsole? = nil) {
        self.dependencies = dependencies
        self.console = console
        self.echoEnabled = echoEnabled
        self.metrics = metrics
        self.metricsCredential = metricsCredential
        self.chat = chat
        self.authMessageTimeout = authMessageTimeout
        self.admin = admin
    }

    /// From now on `/readyz` is 503 and new handshakes get 503.
    func startDraining() { draining.store(true, ordering: .relaxed) }

    var isDraining: Bool { draining.load(ordering: .relaxed) }

    func route(_ request: HTTPRequest, loop: EventLoop) -> Decision {
        let path = request.path
        switch path {
        case "/" where console != nil:
            // Someone who opens the gateway's address in a browser is sent to the console.
            return .respond(HTTPResponse(status: 302, headers: [("Location", ConsoleFiles.pagePath)]))
        case "/healthz":
            return .respond(.json(status: 200, "{\"status\":\"ok\"}"))
        case "/readyz":
            if isDraining { return .respond(.error(status: 503, code: "ERR_DRAINING", message: "gateway is draining")) }
            if let down = dependencies?.unreachable, !down.isEmpty {
                return .respond(.error(status: 503, code: "ERR_UNAVAILABLE",
                                       message: "unreachable: \(down.joined(separator: ", "))"))
            }
            return .respond(.json(status: 200, "{\"status\":\"ready\"}"))
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
            let authMessageTimeout = authMessageTimeout
            return upgrade(request) { upgrade in
                .deferred { completion in
                    chat.openSession(request, loop: loop) { verdict in
                        switch verdict {
                        case .accept(let record):
                            completion(.upgrade(upgrade, open: { loop in chat.registeredSession(record, on: loop) }))
                        case .reject(let response):
                            completion(.respond(response))
                        case .awaitAuthMessage(let options):
                            completion(.upgrade(upgrade, open: { loop in
                                AwaitingAuthSession(service: chat, options: options, loop: loop, timeoutSeconds: authMessageTimeout)
                            }))
                        }
                    }
                }
            }
        default:
            if let console, WebConsole.owns(path) {
                return console.route(request)
            }
            if path.hasPrefix("/v1/admin/"), let admin {
                return .deferred { completion in
                    admin.handle(request) { completion(.respond($0)) }
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
