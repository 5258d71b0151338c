import Dispatch
import EventLoop
import WebSocket

/// A connection to the admin API that carries requests one after another
/// (HTTP/1.1 keep-alive), over plain TCP or TLS, driven by an event loop: a
/// run provisioning thousands of users pays one TLS handshake per connection,
/// not one per call. It connects on the first request and again after the
/// gateway closes it. Use it from its loop only; each completion runs there.
final class AdminConnection: ConnectionHandler, @unchecked Sendable {
    struct Response: Sendable {
        var status: Int
        var body: [UInt8]

        var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    typealias Completion = @Sendable (Result<Response, LoadTestError>) -> Void

    /// Seconds before an unanswered request fails (and is retried by `AdminClient`).
    static let timeoutSeconds = 15

    let loop: EventLoop
    private let address: GatewayAddress
    private let tls: TLSContext?
    private var connection: SocketConnection?
    private var isConnected = false
    private var request: [UInt8] = []
    private var completion: Completion?
    /// Counts requests, so a timeout armed for one does not fire on the next.
    private var generation = 0
    private var buffer: [UInt8] = []
    private var head: HTTPResponseHead?

    init(address: GatewayAddress, tls: TLSContext?, loop: EventLoop) {
        self.address = address
        self.tls = tls
        self.loop = loop
    }

    /// Sends `request` (call on the loop, one at a time) and calls `completion` with the answer.
    func send(_ request: [UInt8], completion: @escaping Completion) {
        self.request = request
        self.completion = completion
        generation += 1
        let armed = generation
        loop.queue.asyncAfter(deadline: .now() + .seconds(Self.timeoutSeconds)) { [self] in
            guard generation == armed, self.completion != nil else { return }
            finish(.failure(LoadTestError("no answer within \(Self.timeoutSeconds) s")))
            connection?.closeNow()
            reset()
        }
        if let connection, isConnected {
            connection.write(request)
            return
        }
        guard connection == nil else { return }  // connecting: the request goes out once connected
        do {
            connection = try SocketConnection.connect(host: address.host, port: address.port, loop: loop, tls: tls, handler: self)
        } catch {
            finish(.failure(LoadTestError("connect to \(address.hostHeader): \(error)")))
        }
    }

    /// Closes the connection; the next request opens a new one.
    func close() {
        connection?.close()
        reset()
    }

    func connectionDidConnect(_ connection: SocketConnection) {
        isConnected = true
        if completion != nil { connection.write(request) }
    }

    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        if head == nil { head = HTTPResponseHead.parse(buffer) }
        guard let head, let length = head.contentLength else { return }
        guard buffer.count - head.byteCount >= length else { return }
        let body = Array(buffer[head.byteCount..<(head.byteCount + length)])
        buffer.removeFirst(head.byteCount + length)
        self.head = nil
        if head.header("Connection")?.lowercased() == "close" { close() }
        finish(.success(Response(status: head.status, body: body)))
    }

    func connectionDidClose(_ connection: SocketConnection) {
        guard connection === self.connection else { return }
        let head = self.head
        let body = head.map { Array(buffer[$0.byteCount...]) }
        reset()
        if let head, head.contentLength == nil, let body {
            finish(.success(Response(status: head.status, body: body)))
        } else {
            finish(.failure(LoadTestError("connection closed before the response was complete")))
        }
    }

    private func reset() {
        connection = nil
        isConnected = false
        buffer = []
        head = nil
    }

    private func finish(_ result: Result<Response, LoadTestError>) {
        guard let completion else { return }
        self.completion = nil
        completion(result)
    }
}
