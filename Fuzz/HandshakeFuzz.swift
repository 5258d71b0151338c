// libFuzzer target: the opening handshake. The input goes to HTTPRequestParser
// in one read and byte by byte (the outcome must not depend on how TCP split
// it); when a request comes out, its headers go through
// WebSocketHandshake.validate and DeflateParameters.negotiate, and a
// negotiated deflate setting is checked end to end (the client accepts the
// server's answer, and a message compressed with it inflates back).
// The parser's bounds are small so the fuzzer reaches them with short inputs.
// Build and run with `scripts/fuzz HandshakeFuzz`.
import WebSocket

private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant violated: \(message())") }
}

private func makeParser() -> HTTPRequestParser {
    HTTPRequestParser(maxHeaderBytes: 1024, maxHeaderLines: 24, maxBodyBytes: 512)
}

/// What a parse produced, comparable.
private enum Outcome: Equatable {
    case incomplete
    case failure(status: Int)
    case request(method: String, target: String, version: String, headers: [String], body: [UInt8], leftover: [UInt8])

    init(_ request: HTTPRequest, leftover: [UInt8]) {
        self = .request(method: request.method, target: request.target, version: request.version,
                        headers: request.headers.map { "\($0.name)\u{0}\($0.value)" }, body: request.body, leftover: leftover)
    }
}

private func parseWhole(_ input: UnsafeRawBufferPointer) -> (Outcome, HTTPRequest?) {
    var parser = makeParser()
    do {
        guard let request = try parser.feed(input) else { return (.incomplete, nil) }
        return (Outcome(request, leftover: parser.leftover), request)
    } catch {
        check((400...499).contains(error.status), "status \(error.status)")
        return (.failure(status: error.status), nil)
    }
}

private func parseByteByByte(_ input: UnsafeRawBufferPointer) -> Outcome {
    var parser = makeParser()
    var index = 0
    while index < input.count {
        do {
            let request = try parser.feed(UnsafeRawBufferPointer(rebasing: input[index..<(index + 1)]))
            index += 1
            if let request {
                // Bytes not fed yet belong to what follows the request, too.
                return Outcome(request, leftover: parser.leftover + Array(input[index...]))
            }
        } catch {
            return .failure(status: error.status)
        }
    }
    return .incomplete
}

private func checkUpgrade(_ request: HTTPRequest) {
    _ = request.path
    _ = request.queryItems
    let offers = request.headerValues("Sec-WebSocket-Extensions")
    let negotiated = DeflateParameters.negotiate(offers: offers)
    switch WebSocketHandshake.validate(request, supportedSubprotocols: ["chat.v2", "chat.v1"]) {
    case .failure(let rejection):
        check((400...499).contains(rejection.status), "rejection status \(rejection.status)")
        check(!rejection.reason.isEmpty, "a rejection without a reason")
        _ = HTTPResponse(status: rejection.status, headers: rejection.sortedHeaders, body: Array(rejection.reason.utf8))
            .serialized(closeConnection: true)
    case .success(let upgrade):
        check(upgrade.deflate == negotiated, "validate and negotiate disagree")
        if let subprotocol = upgrade.subprotocol { check(["chat.v2", "chat.v1"].contains(subprotocol), "subprotocol") }
        let response = WebSocketHandshake.response(for: upgrade)
        check(response.status == 101, "status \(response.status)")
        _ = response.serialized()
    }
    guard let server = negotiated else { return }
    check((9...15).contains(server.serverMaxWindowBits), "server_max_window_bits \(server.serverMaxWindowBits)")
    check((8...15).contains(server.clientMaxWindowBits), "client_max_window_bits \(server.clientMaxWindowBits)")
    // The client must accept what the server answers, and agree on it.
    guard let client = DeflateParameters.clientAccept(response: [server.responseHeaderValue]) else {
        fatalError("client refuses the server's answer \(server.responseHeaderValue)")
    }
    check(client.serverNoContextTakeover == server.serverNoContextTakeover
          && client.clientNoContextTakeover == server.clientNoContextTakeover
          && client.serverMaxWindowBits == server.serverMaxWindowBits, "client reads \(server.responseHeaderValue) differently")
    // A message the server compresses with these settings reaches the client intact.
    var sender = WebSocketConnection(role: .server, maxMessageBytes: 4096, deflate: server)
    var receiver = WebSocketConnection(role: .client, maxMessageBytes: 4096, deflate: client)
    let text = Array(request.target.utf8) + Array(repeating: UInt8(ascii: "a"), count: request.body.count)
    for _ in 0..<2 {
        var events: [WebSocketConnection.Event] = []
        receiver.receive(sender.encodeText(text), events: &events)
        guard events.count == 1, case .text(let received) = events[0], received == text else {
            fatalError("deflate round trip failed: \(events)")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let (whole, request) = parseWhole(input)
    let bytewise = parseByteByByte(input)
    check(whole == bytewise, "one read gives \(whole), byte by byte \(bytewise)")
    if let request { checkUpgrade(request) }
    return 0
}
