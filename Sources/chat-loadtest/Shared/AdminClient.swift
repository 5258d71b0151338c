import Dispatch
import EventLoop
import Synchronization

/// Calls the admin API (PROTOCOL.md §10) with `Authorization: Bearer KEY` over
/// `concurrency` keep-alive connections, one request in flight on each,
/// retrying transport failures and 5xx answers a few times.
final class AdminClient: Sendable {
    struct Call: Sendable {
        var method: String
        var path: String
        var body: String

        static func post(_ path: String, _ body: String) -> Call {
            Call(method: "POST", path: path, body: body)
        }
    }

    let address: GatewayAddress
    let apiKey: String
    let tls: TLSContext?
    let group: EventLoopGroup
    let concurrency: Int
    static let attempts = 5

    init(address: GatewayAddress, apiKey: String, tls: TLSContext?, group: EventLoopGroup, concurrency: Int) {
        self.address = address
        self.apiKey = apiKey
        self.tls = tls
        self.group = group
        self.concurrency = max(1, concurrency)
    }

    func requestBytes(_ call: Call) -> [UInt8] {
        let body = Array(call.body.utf8)
        var head = "\(call.method) \(call.path) HTTP/1.1\r\nHost: \(address.hostHeader)\r\n"
        head += "Authorization: Bearer \(apiKey)\r\nContent-Type: application/json\r\n"
        head += "Content-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Runs every call and blocks until all are answered. Throws when one still
    /// fails after its retries or gets an answer other than 2xx.
    func run(_ calls: [Call]) throws(LoadTestError) -> [AdminConnection.Response] {
        guard !calls.isEmpty else { return [] }
        let batch = AdminBatch(client: self, calls: calls)
        batch.start()
        return try batch.wait()
    }

    func run(_ call: Call) throws(LoadTestError) -> AdminConnection.Response {
        try run([call])[0]
    }
}

/// The calls of one `AdminClient.run`, with at most `concurrency` in flight.
private final class AdminBatch: Sendable {
    private struct State {
        var next = 0
        var remaining: Int
        var results: [AdminConnection.Response?]
        var failure: LoadTestError?
    }

    private let client: AdminClient
    private let calls: [AdminClient.Call]
    /// One keep-alive connection per request in flight, closed when the batch is done.
    private let lanes: [AdminConnection]
    private let state: Mutex<State>
    private let done = DispatchSemaphore(value: 0)

    init(client: AdminClient, calls: [AdminClient.Call]) {
        self.client = client
        self.calls = calls
        lanes = (0..<min(client.concurrency, calls.count)).map { _ in
            AdminConnection(address: client.address, tls: client.tls, loop: client.group.next())
        }
        state = Mutex(State(remaining: calls.count, results: Array(repeating: nil, count: calls.count)))
    }

    func start() {
        for lane in lanes { launchNext(on: lane) }
    }

    func wait() throws(LoadTestError) -> [AdminConnection.Response] {
        done.wait()
        for lane in lanes { lane.loop.execute { lane.close() } }
        let (results, failure) = state.withLock { ($0.results, $0.failure) }
        if let failure { throw failure }
        return results.map { $0! }
    }

    private func launchNext(on lane: AdminConnection) {
        let index: Int? = state.withLock { state in
            guard state.next < calls.count, state.failure == nil else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        if let index { launch(index, attempt: 1, on: lane) }
    }

    private func launch(_ index: Int, attempt: Int, on lane: AdminConnection) {
        let request = client.requestBytes(calls[index])
        lane.loop.execute { [self] in
            lane.send(request) { [self] result in
                settle(index, attempt: attempt, on: lane, result)
            }
        }
    }

    private func settle(_ index: Int, attempt: Int, on lane: AdminConnection,
                        _ result: Result<AdminConnection.Response, LoadTestError>) {
        let call = calls[index]
        var failure: LoadTestError?
        switch result {
        case .success(let response) where (200..<300).contains(response.status):
            finish(index, response: response, failure: nil, lane: lane)
            return
        case .success(let response):
            failure = LoadTestError("\(call.method) \(call.path) → HTTP \(response.status) \(response.bodyText)")
            if response.status < 500 {
                finish(index, response: nil, failure: failure, lane: lane)
                return
            }
        case .failure(let error):
            failure = LoadTestError("\(call.method) \(call.path): \(error)")
        }
        if attempt < AdminClient.attempts {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100 * attempt)) { [self] in
                launch(index, attempt: attempt + 1, on: lane)
            }
        } else {
            finish(index, response: nil, failure: failure, lane: lane)
        }
    }

    private func finish(_ index: Int, response: AdminConnection.Response?, failure: LoadTestError?, lane: AdminConnection) {
        let last = state.withLock { state in
            state.results[index] = response
            if let failure, state.failure == nil {
                state.failure = failure
                // Nothing more is launched: what is not started counts as done.
                state.remaining -= calls.count - state.next
                state.next = calls.count
            }
            state.remaining -= 1
            return state.remaining == 0
        }
        if last {
            done.signal()
        } else {
            launchNext(on: lane)
        }
    }
}
