import Base64Coding

/// The client's RFC 6455 opening handshake, sans-IO: the GET request with a fresh
/// `Sec-WebSocket-Key`, then the server's answer fed in as it arrives until it is a 101 with
/// the right `Sec-WebSocket-Accept` and an acceptable `Sec-WebSocket-Extensions` (§4.1), or
/// a refusal. Every client of this package checks its upgrade here.
public struct WebSocketClientHandshake: Sendable {
    /// What the answer so far amounts to.
    public enum Outcome: Equatable, Sendable {
        /// The head of the answer has not fully arrived.
        case needMoreBytes
        /// The server switched protocols. `deflate` is the permessage-deflate it agreed to (nil:
        /// none); `leftover` holds the bytes that followed the head, the first frames.
        case accepted(deflate: DeflateParameters?, leftover: [UInt8])
        case refused(Refusal)
    }

    /// Why the upgrade failed; the connection is of no further use.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// The server answered with another status: an HTTP error, its body as far as it arrived.
        case status(Int, body: [UInt8])
        /// A 101 whose `Sec-WebSocket-Accept` is not the one for this request's key.
        case badAccept
        /// A 101 with an extension this client did not offer, or an answer to its offer it cannot use.
        case badExtensions(String)
        /// No complete head within `maxHeadBytes`.
        case headTooLarge(limit: Int)

        public var description: String {
            switch self {
            case .status(let status, _): "HTTP \(status)"
            case .badAccept: "bad Sec-WebSocket-Accept"
            case .badExtensions(let value): "unacceptable Sec-WebSocket-Extensions: \(value)"
            case .headTooLarge(let limit): "response head over \(limit / 1024) KiB"
            }
        }
    }

    public let request: [UInt8]
    let expectedAccept: String
    /// The `Sec-WebSocket-Extensions` offer sent, if any.
    let offeredExtensions: String?
    let maxHeadBytes: Int
    private var received: [UInt8] = []

    /// `target` is the request target, path and query (e.g. `/v1/ws?token=…`); `extensions`,
    /// when given, is sent as `Sec-WebSocket-Extensions` (a permessage-deflate offer is the
    /// only one a server may accept). An answer whose head is longer than `maxHeadBytes` is refused.
    public init(host: String, target: String, extensions: String? = nil, maxHeadBytes: Int = 16 * 1024) {
        var generator = SystemRandomNumberGenerator()
        let key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
        var text = "GET \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        text += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: 13\r\n"
        if let extensions { text += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        text += "\r\n"
        request = Array(text.utf8)
        expectedAccept = WebSocketHandshake.acceptValue(forKey: key)
        offeredExtensions = extensions
        self.maxHeadBytes = maxHeadBytes
    }

    /// Bytes of the server's answer, in order; once the outcome is not `.needMoreBytes`, the
    /// handshake is over and takes no more.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        received.append(contentsOf: bytes)
        guard let head = HTTPResponseHead.parse(received) else {
            return received.count > maxHeadBytes ? .refused(.headTooLarge(limit: maxHeadBytes)) : .needMoreBytes
        }
        let rest = Array(received[head.byteCount...])
        received = []
        switch check(head) {
        case .success(let deflate): return .accepted(deflate: deflate, leftover: rest)
        case .failure(.status(let status, _)): return .refused(.status(status, body: rest))
        case .failure(let refusal): return .refused(refusal)
        }
    }

    public mutating func receive(_ bytes: [UInt8]) -> Outcome {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// The one check of a server's answer to the upgrade: the status, the accept value and the extensions.
    func check(_ head: HTTPResponseHead) -> Result<DeflateParameters?, Refusal> {
        guard head.status == 101 else { return .failure(.status(head.status, body: [])) }
        guard head.header("Sec-WebSocket-Accept") == expectedAccept else { return .failure(.badAccept) }
        let answered = head.headers.filter { $0.name.lowercased() == "sec-websocket-extensions" }.map(\.value)
        guard !answered.isEmpty else { return .success(nil) }
        guard offeredExtensions != nil, let deflate = DeflateParameters.clientAccept(response: answered) else {
            return .failure(.badExtensions(answered.joined(separator: ", ")))
        }
        return .success(deflate)
    }
}
