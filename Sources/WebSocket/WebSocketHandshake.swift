import Base64Coding
import COpenSSL

/// The server side of the opening handshake (RFC 6455 §4.2).
public enum WebSocketHandshake {
    /// What a valid upgrade request asks for.
    public struct Upgrade: Sendable, Equatable {
        public var key: String
        /// The subprotocol the server picked from the client's list, if any.
        public var subprotocol: String?
        /// Negotiated permessage-deflate, if the client offered an acceptable set.
        public var deflate: DeflateParameters?
    }

    /// A refused upgrade, for the server to answer in its own format.
    public struct Rejection: Error, Equatable, Sendable {
        /// 426 for a request that does not ask to upgrade, else 400.
        public var status: Int
        /// What was wrong, for a person.
        public var reason: String
        /// The headers RFC 6455 has the answer carry: `Upgrade: websocket` on 426 (with the
        /// version), `Sec-WebSocket-Version: 13` when the version is not 13 (§4.4).
        public var headers: [String: String]

        /// `headers` in name order, so the answer's bytes do not depend on dictionary order.
        public var sortedHeaders: [(name: String, value: String)] {
            headers.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }
        }
    }

    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client key.
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        input.withUnsafeBufferPointer { source in
            _ = SHA1(source.baseAddress, source.count, &digest)
        }
        return Base64.encode(digest)
    }

    /// Checks an upgrade request. `supportedSubprotocols` lists what the server
    /// speaks; the first of the client's offered subprotocols (its preference
    /// order, RFC 6455 §11.3.4) that is supported is picked. `allowDeflate` turns
    /// compression on.
    public static func validate(
        _ request: HTTPRequest, supportedSubprotocols: [String] = [], allowDeflate: Bool = true
    ) -> Result<Upgrade, Rejection> {
        guard request.method == "GET" else {
            return .failure(Rejection(status: 400, reason: "a WebSocket upgrade must be GET", headers: [:]))
        }
        guard request.version == "HTTP/1.1" else {
            return .failure(Rejection(status: 400, reason: "a WebSocket upgrade needs HTTP/1.1", headers: [:]))
        }
        guard request.headerContainsToken("Upgrade", "websocket"),
              request.headerContainsToken("Connection", "upgrade") else {
            return .failure(Rejection(status: 426, reason: "this endpoint speaks WebSocket only",
                                      headers: ["Upgrade": "websocket", "Sec-WebSocket-Version": "13"]))
        }
        guard request.header("Host") != nil else {
            return .failure(Rejection(status: 400, reason: "missing Host header", headers: [:]))
        }
        guard request.header("Sec-WebSocket-Version")?.trimmingASCIISpaces() == "13" else {
            return .failure(Rejection(status: 400, reason: "Sec-WebSocket-Version must be 13",
                                      headers: ["Sec-WebSocket-Version": "13"]))
        }
        guard request.headerValues("Sec-WebSocket-Key").count == 1,
              let key = request.header("Sec-WebSocket-Key"),
              Base64.decode(key)?.count == 16 else {
            return .failure(Rejection(status: 400, reason: "missing or invalid Sec-WebSocket-Key", headers: [:]))
        }
        let offered = request.headerValues("Sec-WebSocket-Protocol")
            .flatMap { $0.split(separator: ",").map { $0.trimmingASCIISpaces() } }
        let subprotocol = offered.first(where: supportedSubprotocols.contains)
        let deflate = allowDeflate ? DeflateParameters.negotiate(offers: request.headerValues("Sec-WebSocket-Extensions")) : nil
        return .success(Upgrade(key: key, subprotocol: subprotocol, deflate: deflate))
    }

    /// The 101 response for an accepted upgrade.
    public static func response(for upgrade: Upgrade) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", acceptValue(forKey: upgrade.key)),
        ]
        if let subprotocol = upgrade.subprotocol { headers.append(("Sec-WebSocket-Protocol", subprotocol)) }
        if let deflate = upgrade.deflate { headers.append(("Sec-WebSocket-Extensions", deflate.responseHeaderValue)) }
        return HTTPResponse(status: 101, headers: headers)
    }
}
