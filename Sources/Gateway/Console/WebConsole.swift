import ChatCore
import ClientAssets
import EventLoop
import Storage
import WebSocket

/// `GET /console` and what the page loads (PROTOCOL.md §14), and the development
/// sign-in `/console/dev-sign-in` (docs/ARCHITECTURE.md, "The web console").
/// The page talks to the gateway only over `/v1/ws`, like any other client.
struct WebConsole: Sendable {
    static let devSignInPath = "/console/dev-sign-in"

    let files: ConsoleFiles
    let devSignIn: DevSignIn
    let tokens: TokenAuthority

    /// Whether `path` is the console's: `/console` or below it.
    static func owns(_ path: String) -> Bool {
        path == ConsoleFiles.pagePath || path.hasPrefix(ConsoleFiles.pagePath + "/")
    }

    func route(_ request: HTTPRequest) -> HTTPRouter.Decision {
        if request.path == Self.devSignInPath {
            return signIn(request)
        }
        return .respond(serve(request))
    }

    // MARK: Files

    /// Every file is revalidated on each load (`no-cache` with its entity tag): the
    /// names carry no version, so a new gateway's console shows at the next reload,
    /// and an unchanged file costs a 304.
    func serve(_ request: HTTPRequest) -> HTTPResponse {
        guard let file = files.file(at: request.path) else {
            if !files.hasPage {
                return .error(status: 503, code: "ERR_UNAVAILABLE",
                              message: "console files not found: \(ClientAssets.bundleName) must sit beside the binary")
            }
            return .error(status: 404, code: "ERR_NOT_FOUND", message: "no route for \(request.path)")
        }
        guard request.method == "GET" else {
            return .error(status: 405, code: "ERR_BAD_REQUEST", message: "the console's files answer GET",
                          headers: [("Allow", "GET")])
        }
        var headers: [(name: String, value: String)] = [
            ("Cache-Control", "no-cache"),
            ("ETag", file.entityTag),
            ("X-Content-Type-Options", "nosniff"),
        ]
        if file.contentType.hasPrefix("text/html") {
            headers += Self.pageHeaders
        }
        if let tags = request.header("If-None-Match"), ConsoleFiles.ifNoneMatch(tags, matches: file.entityTag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", file.contentType)] + headers, body: file.body)
    }

    /// The page loads nothing from elsewhere and runs no inline code; its only
    /// connections are to this gateway (`/v1/ws`, the dev sign-in). No site may frame it.
    static let pageHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("Referrer-Policy", "no-referrer"),
    ]

    // MARK: Development sign-in

    /// `GET`: 200 when the name picker is offered to this request (the page shows it
    /// then). `POST {"userId"}` (JSON): a token for that user. Anything else, and
    /// every request the picker is not offered to, is answered as an unknown path.
    func signIn(_ request: HTTPRequest) -> HTTPRouter.Decision {
        guard devSignIn.admits(request) else {
            return .respond(.error(status: 404, code: "ERR_NOT_FOUND", message: "no route for \(request.path)"))
        }
        switch request.method {
        case "GET":
            return .respond(Self.noStore(.json(status: 200, "{\"ttlSeconds\":\(DevSignIn.tokenTTLSeconds)}")))
        case "POST":
            break
        default:
            return .respond(.error(status: 405, code: "ERR_BAD_REQUEST", message: "dev sign-in takes GET or POST",
                                   headers: [("Allow", "GET, POST")]))
        }
        // A JSON body needs a CORS preflight from any other origin, which this gateway never grants.
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return .respond(.error(status: 400, code: ErrorCode.badRequest.rawValue, message: "send {\"userId\"} as application/json"))
        }
        guard case .object(let body)? = try? JSONParser.parse(request.body),
              case .string(let userID)? = body["userId"], TokenAuthority.isValidUserID(userID) else {
            return .respond(.error(status: 400, code: ErrorCode.badRequest.rawValue,
                                   message: "userId must be 1-128 characters of [A-Za-z0-9_.@-]"))
        }
        let tokens = self.tokens
        return .deferred { completion in
            Task(executorPreference: DispatchTaskExecutor.shared) {
                do {
                    let issued = try await tokens.issue(userID: userID, ttlSeconds: DevSignIn.tokenTTLSeconds)
                    var writer = JSONWriter()
                    writer.beginObject()
                    writer.key("userId"); writer.string(userID)
                    writer.key("token"); writer.string(issued.token)
                    writer.key("expiresAt"); writer.int(issued.expiresAt)
                    writer.endObject()
                    completion(.respond(Self.noStore(HTTPResponse(status: 200, headers: [("Content-Type", "application/json")],
                                                                  body: writer.bytes))))
                } catch {
                    completion(.respond(.error(status: 500, code: ErrorCode.internalError.rawValue, message: "cannot sign token")))
                }
            }
        }
    }

    private static func noStore(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }
}
