import ChatCore
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging

/// POSTs push events to a webhook as a JSON array, one request per batch.
/// The queue is bounded: when the webhook is down and the queue is full the
/// oldest events are dropped (and counted in the log), so fan-out never stalls.
/// Failed posts are retried with exponential backoff (0.5 s doubling to 30 s).
final class WebhookPushSink: PushSink, @unchecked Sendable {
    private let url: URL
    private let session: URLSession
    private let logger: Logger
    private let metrics: GatewayMetrics?
    private let queue = DispatchQueue(label: "chat-gateway.push.webhook")
    private let capacity: Int
    private var pending: [[UInt8]] = []
    /// The batch being posted, out of `pending` so drops never touch it; put back in front on failure.
    private var inFlight: [[UInt8]]?
    private var backoff: Double = 0
    /// A failed post's retry is scheduled: new events wait for it instead of posting at once.
    private var backingOff = false
    private var dropped = 0

    init(url: URL, capacity: Int = 10_000, logger: Logger, metrics: GatewayMetrics? = nil) {
        self.url = url
        self.capacity = capacity
        self.logger = logger
        self.metrics = metrics
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        session = URLSession(configuration: configuration)
    }

    func emit(records events: [[UInt8]]) {
        guard !events.isEmpty else { return }
        queue.async { [self] in
            pending += events
            if pending.count > capacity {
                let excess = pending.count - capacity
                pending.removeFirst(excess)
                dropped += excess
                metrics?.push(sink: "webhook", outcome: "dropped", count: excess)
                logger.warning("push.dropped", metadata: ["sink": "webhook", "count": .stringConvertible(excess), "total": .stringConvertible(dropped)])
            }
            sendNext()
        }
    }

    /// On `queue`.
    private func sendNext() {
        guard inFlight == nil, !backingOff, !pending.isEmpty else { return }
        let batch = Array(pending.prefix(500))
        pending.removeFirst(batch.count)
        inFlight = batch
        var body: [UInt8] = [UInt8(ascii: "[")]
        for (index, event) in batch.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += event
        }
        body.append(UInt8(ascii: "]"))
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
        session.dataTask(with: request) { [self] _, response, error in
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            queue.async { [self] in
                inFlight = nil
                if error == nil, (200..<300).contains(status) {
                    metrics?.push(sink: "webhook", outcome: "delivered", count: batch.count)
                    backoff = 0
                    sendNext()
                } else {
                    metrics?.push(sink: "webhook", outcome: "retried", count: batch.count)
                    pending.insert(contentsOf: batch, at: 0)
                    backoff = min(max(backoff * 2, 0.5), 30)
                    logger.warning("push.webhook_failed", metadata: ["status": .stringConvertible(status), "retryInSeconds": .stringConvertible(backoff)])
                    backingOff = true
                    queue.asyncAfter(deadline: .now() + backoff) { [self] in
                        backingOff = false
                        sendNext()
                    }
                }
            }
        }.resume()
    }

    func flush() {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if queue.sync(execute: { pending.isEmpty && inFlight == nil }) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
