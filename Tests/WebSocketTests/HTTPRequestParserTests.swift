import Testing
@testable import WebSocket

/// An Equatable snapshot of a parsed request and the bytes that followed it.
struct ParsedRequest: Equatable, CustomStringConvertible {
    var method: String
    var target: String
    var version: String
    var headers: [String]
    var body: [UInt8]
    var leftover: [UInt8]

    var description: String {
        "\(method) \(target) \(version) \(headers.map { $0.count > 60 ? $0.prefix(60) + "…[\($0.count)]" : $0 }) "
            + "body[\(body.count)] leftover[\(leftover.count)]"
    }
}

enum ParseOutcome: Equatable {
    case request(ParsedRequest)
    case failure(Int)
    case incomplete
}

/// Feeds `bytes` in pieces of `chunk` bytes (all at once when nil). Bytes not fed
/// because the request completed earlier count as leftover, as the caller would see them.
func parseRequest(_ bytes: [UInt8], chunk: Int? = nil, parser: HTTPRequestParser = HTTPRequestParser()) -> ParseOutcome {
    var parser = parser
    var start = 0
    while start < bytes.count {
        let end = min(bytes.count, start + (chunk ?? bytes.count))
        let piece = Array(bytes[start..<end])
        start = end
        do throws(HTTPRequestParser.Failure) {
            if let request = try feedOnce(&parser, piece) {
                return .request(ParsedRequest(
                    method: request.method, target: request.target, version: request.version,
                    headers: request.headers.map { "\($0.name): \($0.value)" }, body: request.body,
                    leftover: parser.leftover + bytes[start...]))
            }
        } catch {
            return .failure(error.status)
        }
    }
    return .incomplete
}

func feedOnce(_ parser: inout HTTPRequestParser, _ bytes: [UInt8]) throws(HTTPRequestParser.Failure) -> HTTPRequest? {
    var result: Result<HTTPRequest?, HTTPRequestParser.Failure> = .success(nil)
    bytes.withUnsafeBytes { input in
        do throws(HTTPRequestParser.Failure) { result = .success(try parser.feed(input)) } catch { result = .failure(error) }
    }
    return try result.get()
}

func requestBytes(_ head: [String], body: [UInt8] = []) -> [UInt8] {
    Array((head.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
}

let upgradeHead = [
    "GET /v1/ws?token=abc&device=phone%201 HTTP/1.1", "Host: chat.example.com", "Upgrade: websocket",
    "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
]

@Suite struct HTTPRequestParserTests {
    @Test func upgradeRequest() {
        let outcome = parseRequest(requestBytes(upgradeHead))
        #expect(outcome == .request(ParsedRequest(
            method: "GET", target: "/v1/ws?token=abc&device=phone%201", version: "HTTP/1.1",
            headers: Array(upgradeHead.dropFirst()), body: [], leftover: [])))
    }

    @Test func headerValuesAreTrimmedAndNamesKeptAsSent() {
        let outcome = parseRequest(requestBytes(["GET / HTTP/1.1", "X-Thing:   padded value \t", "empty:"]))
        guard case .request(let request) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(request.headers == ["X-Thing: padded value", "empty: "])
    }

    @Test func headersOver8KiBAre431() {
        let big = "X-Big: " + String(repeating: "a", count: 8200)
        #expect(parseRequest(requestBytes(["GET / HTTP/1.1", big])) == .failure(431))
        // Also before the end of the header block arrives.
        #expect(parseRequest(Array(("GET / HTTP/1.1\r\n" + big).utf8)) == .failure(431))
    }

    @Test func headerBlockOfExactly8KiBIsAccepted() {
        let head = ["GET / HTTP/1.1", "X-Fill: "]
        let used = head.joined(separator: "\r\n").utf8.count
        let exact = ["GET / HTTP/1.1", "X-Fill: " + String(repeating: "f", count: 8192 - used)]
        #expect(exact.joined(separator: "\r\n").utf8.count == 8192)
        guard case .request = parseRequest(requestBytes(exact)) else {
            Issue.record("8192-byte header block refused")
            return
        }
        let over = ["GET / HTTP/1.1", "X-Fill: " + String(repeating: "f", count: 8193 - used)]
        #expect(parseRequest(requestBytes(over)) == .failure(431))
    }

    @Test func over100HeaderLinesAre431() {
        let lines = (0..<101).map { "X-H\($0): v" }
        #expect(parseRequest(requestBytes(["GET / HTTP/1.1"] + lines)) == .failure(431))
        // Without waiting for the blank line.
        let unfinished = Array((["GET / HTTP/1.1"] + lines + ["X-More: v"]).joined(separator: "\r\n").utf8)
        #expect(parseRequest(unfinished) == .failure(431))
    }

    @Test func exactly100HeaderLinesAreAccepted() {
        let lines = (0..<100).map { "X-H\($0): v" }
        guard case .request(let request) = parseRequest(requestBytes(["GET / HTTP/1.1"] + lines)) else {
            Issue.record("100 header lines refused")
            return
        }
        #expect(request.headers.count == 100)
    }

    @Test(arguments: [
        "GET /", "GET  / HTTP/1.1", "GET / HTTP/1.1 extra", " GET / HTTP/1.1", "GET / HTTP/2.0", "GET / FTP/1.1",
        "G(T / HTTP/1.1", "", "GET / http/1.1",
    ])
    func malformedRequestLineIs400(line: String) {
        #expect(parseRequest(requestBytes([line, "Host: x"])) == .failure(400))
    }

    @Test(arguments: ["NoColon", ": empty name", "Bad Name: x", " X-Folded: y"])
    func malformedHeaderLineIs400(line: String) {
        #expect(parseRequest(requestBytes(["GET / HTTP/1.1", line])) == .failure(400))
    }

    @Test func contentLengthBodyAcrossFeeds() throws {
        var parser = HTTPRequestParser()
        let bytes = requestBytes(["POST /admin/users HTTP/1.1", "Content-Length: 11"], body: Array("hello world".utf8))
        let cut = bytes.count - 6
        let first = try feedOnce(&parser, Array(bytes[..<cut]))
        #expect(first == nil, "waits for the rest of the body")
        let request = try feedOnce(&parser, Array(bytes[cut...]) + Array("NEXT".utf8))
        #expect(request?.body == Array("hello world".utf8))
        #expect(parser.leftover == Array("NEXT".utf8))
    }

    @Test func invalidContentLengthIs400() {
        #expect(parseRequest(requestBytes(["POST / HTTP/1.1", "Content-Length: -1"])) == .failure(400))
        #expect(parseRequest(requestBytes(["POST / HTTP/1.1", "Content-Length: ten"])) == .failure(400))
    }

    @Test func bodyOverTheLimitIs413() {
        let parser = HTTPRequestParser(maxBodyBytes: 10)
        #expect(parseRequest(requestBytes(["POST / HTTP/1.1", "Content-Length: 11"]), parser: parser) == .failure(413))
    }

    @Test(arguments: ["chunked", "gzip, chunked", "identity"])
    func transferEncodingIs400(value: String) {
        let bytes = requestBytes(["POST / HTTP/1.1", "Transfer-Encoding: \(value)"], body: Array("5\r\nhello\r\n0\r\n\r\n".utf8))
        #expect(parseRequest(bytes) == .failure(400))
    }

    @Test func framesPipelinedAfterTheUpgradeAreKept() {
        let frames = clientFrame(0x81, "Hello") + clientFrame(0x89, [])
        guard case .request(let request) = parseRequest(requestBytes(upgradeHead) + frames) else {
            Issue.record("no request")
            return
        }
        #expect(request.leftover == frames)
        var connection = server()
        #expect(feed(&connection, request.leftover) == [.text("Hello"), .send(opcode: 0xA, payload: [], masked: false), .ping([])])
    }

    @Test func leftoverAfterABody() {
        let bytes = requestBytes(["POST / HTTP/1.1", "Content-Length: 3"], body: Array("abcGET".utf8))
        guard case .request(let request) = parseRequest(bytes) else {
            Issue.record("no request")
            return
        }
        #expect(request.body == Array("abc".utf8))
        #expect(request.leftover == Array("GET".utf8))
    }

    @Test func incompleteRequestWaits() {
        #expect(parseRequest(Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)) == .incomplete)
    }

    @Test func queryParametersArePercentDecoded() {
        let request = HTTPRequest(method: "GET", target: "/v1/ws?token=a%2Bb%3D&device=my+phone%20%C3%A9&hideBlocked=1&flag&bad=%zz%4")
        #expect(request.path == "/v1/ws")
        #expect(request.queryItems.map { "\($0.name)=\($0.value)" }
            == ["token=a+b=", "device=my phone é", "hideBlocked=1", "flag=", "bad=%zz%4"])
        #expect(request.queryValue("device") == "my phone é")
        #expect(request.queryValue("missing") == nil)
        #expect(HTTPRequest(method: "GET", target: "/healthz").queryItems.isEmpty)
        let odd = HTTPRequest(method: "GET", target: "/v1/ws?&&to%6Ben=x&token=y&=z&")
        #expect(odd.queryItems.map { "\($0.name)=\($0.value)" } == ["token=x", "token=y", "=z"], "empty pairs are skipped")
        #expect(odd.queryValue("token") == "x", "the first of two, its name decoded before it is compared")
        #expect(HTTPRequest(method: "GET", target: "/?t=%4").queryValue("t") == "%4", "a cut escape stays as sent")
    }

    @Test func headerLookupIsCaseInsensitive() {
        let request = HTTPRequest(method: "GET", target: "/", headers: [("sec-websocket-key", "k"), ("X-A", "1"), ("x-a", "2")])
        #expect(request.header("Sec-WebSocket-Key") == "k")
        #expect(request.headerValues("X-A") == ["1", "2"])
        #expect(request.header("X_A") == nil && request.header("X-A-") == nil, "only letters compare without case")
        #expect(HTTPRequest(method: "GET", target: "/", headers: [("[", "1")]).header("{") == nil)
    }
}
