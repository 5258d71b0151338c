import Dispatch
import EventLoop
import Synchronization

/// Calls the admin API (PROTOCOL.md §10) with `Authorization: Bearer KEY`, one
/// request per connection and a bounded number in flight, retrying transport
/// failures and 5xx answers a few times.
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
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Runs every call and blocks until all are answered. Throws when one still
    /// fails after its retries or gets an answer other than 2xx.
    func run(_ calls: [Call]) throws(LoadTestError) -> [HTTPExchange.Response] {
        guard !calls.isEmpty else { return [] }
        let batch = AdminBatch(client: self, calls: calls)
        batch.start()
        return try batch.wait()
    }

    func run(_ call: Call) throws(LoadTestError) -> HTTPExchange.Response {
        try run([call])[0]
    }
}

/// The calls of one `AdminClient.run`, with at most `concurrency` in flight.
private final class AdminBatch: Sendable {
    private struct State {
        var next = 0
        var remaining: Int
        var results: [HTTPExchange.Response?]
        var failure: LoadTestError?
    }

    private let client: AdminClient
    private let calls: [AdminClient.Call]
    private let state: Mutex<State>
    private let done = DispatchSemaphore(value: 0)

    init(client: AdminClient, calls: [AdminClient.Call]) {
        self.client = client
        self.calls = calls
        state = Mutex(State(remaining: calls.count, results: Array(repeating: nil, count: calls.count)))
    }

    func start() {
        for _ in 0..<min(client.concurrency, calls.count) { launchNext() }
    }

    func wait() throws(LoadTestError) -> [HTTPExchange.Response] {
        done.wait()
        let (results, failure) = state.withLock { ($0.results, $0.failure) }
        if let failure { throw failure }
        return results.map { $0! }
    }

    private func launchNext() {
        let index: Int? = state.withLock { state in
            guard state.next < calls.count, state.failure == nil else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        if let index { launch(index, attempt: 1) }
    }

    private func launch(_ index: Int, attempt: Int) {
        let loop = client.group.next()
        let request = client.requestBytes(calls[index])
        loop.execute { [self] in
            HTTPExchange.start(address: client.address, tls: client.tls, loop: loop, request: request) { [self] result in
                settle(index, attempt: attempt, result)
            }
        }
    }

    private func settle(_ index: Int, attempt: Int, _ result: Result<HTTPExchange.Response, LoadTestError>) {
        let call = calls[index]
        var failure: LoadTestError?
        switch result {
        case .success(let response) where (200..<300).contains(response.status):
            finish(index, response: response, failure: nil)
            return
        case .success(let response):
            failure = LoadTestError("\(call.method) \(call.path) → HTTP \(response.status) \(response.bodyText)")
            if response.status < 500 {
                finish(index, response: nil, failure: failure)
                return
            }
        case .failure(let error):
            failure = LoadTestError("\(call.method) \(call.path): \(error)")
        }
        if attempt < AdminClient.attempts {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100 * attempt)) { [self] in
                launch(index, attempt: attempt + 1)
            }
        } else {
            finish(index, response: nil, failure: failure)
        }
    }

    private func finish(_ index: Int, response: HTTPExchange.Response?, failure: LoadTestError?) {
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
            launchNext()
        }
    }
}
