import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// The web console (PROTOCOL.md §14): `/console` and the files it loads are served
/// from the binary's resource folder, `console.enabled=false` removes them, and the
/// development sign-in answers only a dev-secret gateway on a loopback listener, to
/// requests that name a loopback host.
@Suite("Console")
struct ConsoleTests {
    // MARK: The page and its files

    @Test("/console is an HTML page whose stylesheet, scripts and icon are served with their types")
    func pageAndAssets() async throws {
        let gateway = try await TestGateway.chat()
        let page = try await gateway.http("GET", "/console")
        #expect(page.status == 200)
        #expect(page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["cache-control"] == "no-cache")
        #expect(page.headers["etag"]?.hasPrefix("\"") == true)
        #expect(page.headers["x-content-type-options"] == "nosniff")
        let policy = page.headers["content-security-policy"] ?? ""
        #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"))
        #expect(page.body.contains("<!doctype html>"))

        let referenced = Self.references(in: page.body)
        #expect(Set(referenced) == ["/console/console.css", "/console/console.js", "/console/icon.svg"], "\(referenced)")
        let types = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]
        for path in referenced {
            let asset = try await gateway.http("GET", path)
            #expect(asset.status == 200, "\(path)")
            #expect(asset.headers["content-type"] == types[String(path.split(separator: ".").last ?? "")], "\(path)")
            #expect(asset.headers["cache-control"] == "no-cache", "\(path)")
            #expect(!asset.body.isEmpty, "\(path)")
        }
        // The console imports the SDK beside it; no file reaches outside the gateway.
        let script = try await gateway.http("GET", "/console/console.js")
        #expect(script.body.contains("from \"./chat-client.js\""))
        let sdk = try await gateway.http("GET", "/console/chat-client.js")
        #expect(sdk.status == 200)
        #expect(sdk.headers["content-type"] == "text/javascript; charset=utf-8")
        #expect(sdk.body.contains("export { ChatClient } from \"./chat-client/client.js\""))
        for file in [page.body, script.body, sdk.body, try await gateway.http("GET", "/console/console.css").body] {
            #expect(!file.contains("http://") && !file.contains("https://") && !file.contains("//cdn"), "no external asset")
        }
    }

    @Test("the SDK's entry and every module it imports, directly or not, are served as JavaScript; its tests are not")
    func sdkModules() async throws {
        let gateway = try await TestGateway.chat()
        var served: [String: String] = [:]  // URL path → body
        var waiting = ["/console/chat-client.js"]
        while let path = waiting.popLast() {
            guard served[path] == nil else { continue }
            let module = try await gateway.http("GET", path)
            #expect(module.status == 200, "\(path)")
            #expect(module.headers["content-type"] == "text/javascript; charset=utf-8", "\(path)")
            #expect(!module.body.contains("http://") && !module.body.contains("https://"), "no external asset in \(path)")
            served[path] = module.body
            waiting += Self.relativeImports(in: module.body).map { Self.resolve($0, from: path) }
        }
        #expect(served["/console/chat-client/client.js"]?.contains("export class ChatClient") == true)
        // Every module of clients/js/chat-client/ is reached from the entry, so each one is served.
        let folder = ProtocolReferenceTests.root.appendingPathComponent("clients/js/chat-client")
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".js") }
        #expect(onDisk.count > 1)
        #expect(Set(served.keys) == Set(["/console/chat-client.js"] + onDisk.map { "/console/chat-client/" + $0 }))
        for path in ["/console/test/client.test.mjs", "/console/js/test/client.test.mjs", "/console/chat-client/test/client.test.mjs",
                     "/console/test-support/live-gateway.mjs", "/console/examples/first-app.mjs"] {
            #expect(try await gateway.http("GET", path).status == 404, "\(path)")
        }
    }

    @Test("from the SDK's folder only its .js modules are served")
    func sdkFolderServesModulesOnly() {
        let files = ConsoleFiles(resources: ["console/index.html": [], "chat-client.js": [], "chat-client/client.js": [],
                                             "chat-client/notes.txt": [], "chat-client.mjs": [], "js/test/client.test.mjs": []])
        #expect(files.paths == ["/console", "/console/", "/console/chat-client.js", "/console/chat-client/client.js"])
    }

    @Test("/console/ is the page too; an unknown file is 404; files answer GET only")
    func pathsAndMethods() async throws {
        let gateway = try await TestGateway.chat()
        #expect(try await gateway.http("GET", "/console/").headers["content-type"] == "text/html; charset=utf-8")
        let missing = try await gateway.http("GET", "/console/nope.js")
        #expect(missing.status == 404)
        #expect(missing.errorCode == "ERR_NOT_FOUND")
        #expect(try await gateway.http("GET", "/console/../v1/admin/users").status != 200)
        let posted = try await gateway.http("POST", "/console", body: [:])
        #expect(posted.status == 405)
        #expect(posted.headers["allow"] == "GET")
        #expect(try await gateway.http("GET", "/consoles").status == 404)
    }

    @Test("a matching If-None-Match gets 304 with no body; another tag gets the file")
    func revalidation() async throws {
        let gateway = try await TestGateway.chat()
        let first = try await gateway.http("GET", "/console/console.css")
        let tag = try #require(first.headers["etag"])
        let again = try await gateway.http("GET", "/console/console.css", headers: ["If-None-Match: W/\(tag)"])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.headers["etag"] == tag)
        #expect(again.headers["content-length"] == nil)
        let other = try await gateway.http("GET", "/console/console.css", headers: ["If-None-Match: \"0000000000000000\""])
        #expect(other.status == 200)
        #expect(other.body == first.body)
    }

    @Test("console.enabled false: /console, its files and the dev sign-in are 404")
    func disabled() async throws {
        let gateway = try await TestGateway.chat { settings, _ in settings.consoleEnabled = false }
        for path in ["/console", "/console/", "/console/console.js", "/console/chat-client.js", WebConsole.devSignInPath] {
            let response = try await gateway.http("GET", path)
            #expect(response.status == 404, "\(path)")
            #expect(response.errorCode == "ERR_NOT_FOUND", "\(path)")
        }
        #expect(try await gateway.http("POST", WebConsole.devSignInPath, body: ["userId": "alice"]).status == 404)
        #expect(try await gateway.http("GET", "/healthz").status == 200)
    }

    @Test("a gateway without the chat core (echo only) serves no console")
    func noChatNoConsole() async throws {
        let gateway = try TestGateway()
        #expect(try await gateway.http("GET", "/console").status == 404)
    }

    // MARK: Development sign-in

    @Test("dev secret on loopback: GET says it is offered, POST gives a token that opens /v1/ws as that user")
    func devSignInIssuesWorkingToken() async throws {
        let gateway = try await TestGateway.chat()
        let offered = try await gateway.http("GET", WebConsole.devSignInPath)
        #expect(offered.status == 200)
        #expect(offered.headers["cache-control"] == "no-store")
        let issued = try await gateway.http("POST", WebConsole.devSignInPath, body: ["userId": "alice"],
                                            headers: ["Origin: http://127.0.0.1:\(gateway.port)"])
        #expect(issued.status == 200, "\(issued.body)")
        #expect(issued.headers["cache-control"] == "no-store")
        #expect(issued.json["userId"] as? String == "alice")
        let token = try #require(issued.json["token"] as? String)
        let expiresAt = try #require(issued.json["expiresAt"] as? Int)
        #expect(expiresAt > Int(gateway.clock.now()))
        let client = try await gateway.connect(token: token)
        let me = try client.ok("me")
        #expect((me["user"] as? [String: Any])?["id"] as? String == "alice")
    }

    @Test("dev sign-in refuses a bad user id and a body that is not application/json")
    func devSignInValidates() async throws {
        let gateway = try await TestGateway.chat()
        let bad = try await gateway.http("POST", WebConsole.devSignInPath, body: ["userId": "no spaces allowed"])
        #expect(bad.status == 400)
        #expect(bad.errorCode == "ERR_BAD_REQUEST")
        #expect(try await gateway.http("POST", WebConsole.devSignInPath, body: ["user": "alice"]).status == 400)
        let form = try await rawRequest(gateway.port, "POST \(WebConsole.devSignInPath) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                            + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 12\r\n\r\nuserId=alice")
        #expect(form.status == 400)
        #expect(try await gateway.http("DELETE", WebConsole.devSignInPath).status == 405)
    }

    @Test("not the dev secret: the dev sign-in does not exist (404), the page still does")
    func devSignInNeedsDevSecret() async throws {
        let gateway = try await TestGateway.chat { _, chat in chat.auth.jwtSecret = "a-real-secret-0123456789abcdefghijklmnop" }
        #expect(try await gateway.http("GET", WebConsole.devSignInPath).status == 404)
        let post = try await gateway.http("POST", WebConsole.devSignInPath, body: ["userId": "alice"])
        #expect(post.status == 404)
        #expect(post.json["token"] == nil)
        #expect(try await gateway.http("GET", "/console").status == 200)
    }

    @Test("a listener that is not loopback: no dev sign-in, even for a request from 127.0.0.1")
    func devSignInNeedsLoopbackListener() async throws {
        let gateway = try await TestGateway.chat { settings, _ in settings.host = "0.0.0.0" }
        #expect(try await gateway.http("GET", WebConsole.devSignInPath).status == 404)
        #expect(try await gateway.http("POST", WebConsole.devSignInPath, body: ["userId": "alice"]).status == 404)
        #expect(try await gateway.http("GET", "/console").status == 200)
    }

    @Test("a Host or Origin that is not loopback (DNS rebinding, another site's script) gets 404")
    func devSignInNeedsLoopbackHost() async throws {
        let gateway = try await TestGateway.chat()
        let body = #"{"userId":"alice"}"#
        let post = { (host: String, extra: String) in
            "POST \(WebConsole.devSignInPath) HTTP/1.1\r\nHost: \(host)\r\n\(extra)Content-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        let rebound = try await rawRequest(gateway.port, post("evil.example:\(gateway.port)", ""))
        #expect(rebound.status == 404)
        #expect(!rebound.body.contains("token"))
        #expect(try await rawRequest(gateway.port, post("127.0.0.1.evil.example", "")).status == 404)
        #expect(try await rawRequest(gateway.port, post("127.0.0.1:\(gateway.port)", "Origin: https://evil.example\r\n")).status == 404)
        #expect(try await rawRequest(gateway.port, "GET \(WebConsole.devSignInPath) HTTP/1.1\r\nHost: evil.example\r\n\r\n").status == 404)
        #expect(try await rawRequest(gateway.port, post("localhost:\(gateway.port)", "Origin: http://localhost:\(gateway.port)\r\n")).status == 200)
        #expect(try await rawRequest(gateway.port, post("[::1]:\(gateway.port)", "")).status == 200)
    }

    @Test("loopback host names: 127/8, localhost and [::1], with or without a port; nothing else")
    func loopbackAuthorities() {
        for yes in ["127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:9300", "[::1]", "[::1]:8080", "127.1.2.3:1"] {
            #expect(DevSignIn.namesLoopback(authority: yes), "\(yes)")
        }
        for no in ["", "evil.example", "127.0.0.1.evil.example", "127.0.0.1:", "127.0.0.1:80x", "localhost.", "[::1]x",
                   "[::2]:80", "10.0.0.1", "0.0.0.0:8080", "127.0.0.1:8080@evil"] {
            #expect(!DevSignIn.namesLoopback(authority: no), "\(no)")
        }
        #expect(DevSignIn.isLoopbackOrigin("http://127.0.0.1:8080"))
        #expect(DevSignIn.isLoopbackOrigin("https://localhost"))
        #expect(!DevSignIn.isLoopbackOrigin("null"))
        #expect(!DevSignIn.isLoopbackOrigin("http://evil.example"))
        #expect(!DevSignIn.isLoopbackOrigin("file://"))
    }

    // MARK: Configuration

    @Test("console.enabled: true by default; false from the file or CHAT_GATEWAY_CONSOLE_ENABLED")
    func configurationKey() throws {
        #expect(try GatewayConfiguration.load(filePath: nil, environment: [:]).console.enabled)
        #expect(TransportSettings(GatewayConfiguration()).consoleEnabled)
        let off = try GatewayConfiguration.load(filePath: nil, environment: ["CHAT_GATEWAY_CONSOLE_ENABLED": "false"])
        #expect(!off.console.enabled)
        #expect(!TransportSettings(off).consoleEnabled)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString).json").path
        try Data(#"{"console":{"enabled":false}}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try !GatewayConfiguration.load(filePath: path, environment: [:]).console.enabled)
        let wrong = URL(fileURLWithPath: path + ".wrong.json")
        try Data(#"{"console":{"enabled":"no"}}"#.utf8).write(to: wrong)
        defer { try? FileManager.default.removeItem(at: wrong) }
        #expect(throws: ConfigurationError.wrongType(key: "console.enabled", expected: "a boolean", source: wrong.path)) {
            try GatewayConfiguration.load(filePath: wrong.path, environment: [:])
        }
    }

    // MARK: Helpers

    /// The `/console/…` paths a page names in `href` and `src`.
    static func references(in html: String) -> [String] {
        var paths: [String] = []
        for attribute in ["href=\"", "src=\""] {
            var rest = html[...]
            while let start = rest.range(of: attribute) {
                rest = rest[start.upperBound...]
                guard let end = rest.firstIndex(of: "\"") else { break }
                let value = String(rest[..<end])
                if value.hasPrefix("/") { paths.append(value) }
            }
        }
        return Array(Set(paths)).sorted()
    }

    /// The relative specifiers (`./x.js`, `../x.js`) a module's `import … from` and `export … from` name.
    static func relativeImports(in module: String) -> [String] {
        var specifiers: [String] = []
        var rest = module[...]
        while let start = rest.range(of: "from \"") {
            rest = rest[start.upperBound...]
            guard let end = rest.firstIndex(of: "\"") else { break }
            let value = String(rest[..<end])
            if value.hasPrefix("./") || value.hasPrefix("../") { specifiers.append(value) }
        }
        return specifiers
    }

    /// A relative `specifier` resolved against the URL path of the module that names it, as a browser does.
    static func resolve(_ specifier: String, from path: String) -> String {
        var parts = path.split(separator: "/").dropLast().map(String.init)
        for part in specifier.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { _ = parts.popLast() } else { parts.append(String(part)) }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// One hand-written request (its own `Host`), and the answer.
    func rawRequest(_ port: Int, _ request: String) async throws -> HTTPJSON {
        try await offThePool {
            let client = try TestClient(port: port)
            try client.write(request)
            let response = try client.readResponse()
            return HTTPJSON(status: response.status, headers: response.headers, body: response.body,
                            json: parseJSONObject(response.body))
        }
    }
}
