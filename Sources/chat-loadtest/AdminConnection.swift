import Dispatch
import EventLoop
import WebSocket

/// One HTTP/1.1 request on its own connection (`Connection: close`), driven by
/// an event loop, so the admin API works over plain TCP and TLS alike.
/// `completion` runs once, on the connection's loop.
final class HTTPExchange: ConnectionHandler, @unchecked Sendable {
    struct Response: Sendable {
        var status: Int
        var body: [UInt8]

        var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    private let request: [UInt8]
    private let completion: @Sendable (Result<Response, LoadTestError>) -> Void
    private var buffer: [UInt8] = []
    private var head: HTTPResponseHead?
    private var finished = false
    private var connection: SocketConnection?
    /// Seconds before an unanswered exchange fails (and is retried by `AdminClient`).
    static let timeoutSeconds = 15

    private init(request: [UInt8], completion: @escaping @Sendable (Result<Response, LoadTestError>) -> Void) {
        self.request = request
        self.completion = completion
    }

    /// Connects from `loop` (call on the loop) and sends `request` once connected.
    static func start(address: GatewayAddress, tls: TLSContext?, loop: EventLoop, request: [UInt8],
                      completion: @escaping @Sendable (Result<Response, LoadTestError>) -> Void) {
        let exchange = HTTPExchange(request: request, completion: completion)
        do {
            exchange.connection = try SocketConnection.connect(host: address.host, port: address.port, loop: loop, tls: tls, handler: exchange)
        } catch {
            exchange.finish(.failure(LoadTestError("connect to \(address.hostHeader): \(error)")))
            return
        }
        // A connect whose failure is never reported must not hang provisioning.
        loop.queue.asyncAfter(deadline: .now() + .seconds(timeoutSeconds)) {
            exchange.finish(.failure(LoadTestError("no answer within \(timeoutSeconds) s")))
            exchange.connection?.closeNow()
            exchange.connection = nil
        }
    }

    func connectionDidConnect(_ connection: SocketConnection) {
        connection.write(request)
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        if head == nil { head = HTTPResponseHead.parse(buffer) }
        guard let head, let length = head.contentLength else { return }
        guard buffer.count - head.byteCount >= length else { return }
        finish(.success(Response(status: head.status, body: Array(buffer[head.byteCount..<(head.byteCount + length)]))))
        connection.close()
    }

    func connectionDidClose(_ connection: SocketConnection) {
        self.connection = nil
        if let head, head.contentLength == nil {
            finish(.success(Response(status: head.status, body: Array(buffer[head.byteCount...]))))
        } else {
            finish(.failure(LoadTestError("connection closed before the response was complete")))
        }
    }

    private func finish(_ result: Result<Response, LoadTestError>) {
        guard !finished else { return }
        finished = true
        completion(result)
    }
}
