import WebSocket

/// Decides what each HTTP request gets: a response, or an upgrade to a WebSocket application.
struct HTTPRouter: Sendable {
    enum Decision {
        case respond(HTTPResponse)
        case upgrade(WebSocketHandshake.Upgrade, any WebSocketApplication)
    }

    var echoEnabled: Bool

    func route(_ request: HTTPRequest) -> Decision {
        switch request.path {
        case "/healthz":
            return .respond(.json(status: 200, "{\"status\":\"ok\"}"))
        case "/readyz":
            return .respond(.json(status: 200, "{\"status\":\"ready\"}"))
        case "/v1/echo" where echoEnabled:
            switch WebSocketHandshake.validate(request) {
            case .success(let upgrade): return .upgrade(upgrade, EchoApplication())
            case .failure(let rejection): return .respond(rejection.response)
            }
        default:
            return .respond(.error(status: 404, code: "ERR_NOT_FOUND", message: "no route for \(request.path)"))
        }
    }
}
