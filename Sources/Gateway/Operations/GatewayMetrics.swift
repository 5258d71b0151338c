import CoreMetrics
import Prometheus

/// Every metric served at `/metrics`: swift-metrics instruments backed by a
/// Prometheus registry of this gateway's own (not the process-wide
/// `MetricsSystem`, so several gateways can live in one test process).
///
/// Hot paths count in batches: the fan-out adds a shard's deliveries of one
/// message in one increment, not one per recipient.
final class GatewayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    let connectionsPlain: CoreMetrics.Meter
    let connectionsTLS: CoreMetrics.Meter
    let messagesReceived: CoreMetrics.Counter
    let messagesStored: CoreMetrics.Counter
    /// `message.send` rejected by the per-user rate (§6).
    let messagesRateLimited: CoreMetrics.Counter
    /// Stored but not delivered live: over the open-channel rate (§6).
    let messagesOpenChannelThrottled: CoreMetrics.Counter
    let deliveries: CoreMetrics.Counter
    let deliveriesSuppressedByBlocking: CoreMetrics.Counter
    let slowConsumerCloses: CoreMetrics.Counter
    /// Times the listener stopped accepting for a moment: out of descriptors or kernel memory.
    let acceptPauses: CoreMetrics.Counter
    /// Requests answered ERR_RATE_LIMITED by their connection's budget, by reason (`rate`, `in_flight`).
    let requestsRefusedByRate: CoreMetrics.Counter
    let requestsRefusedInFlight: CoreMetrics.Counter
    let groupCommitBatchSize: CoreMetrics.Recorder
    let groupCommitLatency: CoreMetrics.Timer
    let fanOutLatency: CoreMetrics.Timer
    /// Cluster bus (§13): this node's events published, other nodes' events received,
    /// and `session.resync` rounds after a bus outage.
    let busEventsOut: CoreMetrics.Counter
    let busEventsIn: CoreMetrics.Counter
    /// Of those received, the ones off chat channels' streams (the rest are control events
    /// every node hears), and how many channels' streams this node follows.
    let busStreamEventsIn: CoreMetrics.Counter
    let busFollowedChannels: CoreMetrics.Gauge
    /// Typing changes heard off the bus (this node's own included).
    let busTypingIn: CoreMetrics.Counter
    let busResyncs: CoreMetrics.Counter
    /// From a node's PUBLISH to its own event coming back on its subscription: the bus
    /// round trip every cluster write waits for before its reply.
    let busEchoLatency: CoreMetrics.Timer
    /// Payloads off the bus dropped unapplied: a missing or wrong HMAC (`cluster.busSecret`),
    /// or a field that breaks `BusInputRules` / does not parse.
    let busPayloadsRejectedSignature: CoreMetrics.Counter
    let busPayloadsRejectedMalformed: CoreMetrics.Counter
    /// Committed events dropped from a full outbox (their channels resync when the bus is back).
    let busOutboxDropped: CoreMetrics.Counter
    /// Redis connections closed because a command went unanswered for `cluster.commandTimeoutMs`.
    let redisTimeouts: CoreMetrics.Counter
    /// §14: typing events this node decided to send, `channel.markRead` writes, `channel.read`
    /// events sent out (each to a channel's members), presence subscriptions held.
    let typingStarts: CoreMetrics.Counter
    let typingStops: CoreMetrics.Counter
    let readMarksStored: CoreMetrics.Counter
    let readMarksFailed: CoreMetrics.Counter
    let readEvents: CoreMetrics.Counter
    let presenceSubscriptions: CoreMetrics.Gauge

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            "chat_group_commit_duration_seconds": [
                .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
                .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .seconds(1),
            ],
            "chat_bus_echo_duration_seconds": [
                .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .seconds(1),
            ],
            "chat_fanout_duration_seconds": [
                .microseconds(10), .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500),
                .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                .milliseconds(100),
            ],
        ]
        factory.valueHistogramBuckets = ["chat_group_commit_batch_size": [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000]]
        self.factory = factory
        connectionsPlain = CoreMetrics.Meter(label: "chat_connections", dimensions: [("transport", "ws")], factory: factory)
        connectionsTLS = CoreMetrics.Meter(label: "chat_connections", dimensions: [("transport", "wss")], factory: factory)
        messagesReceived = CoreMetrics.Counter(label: "chat_messages_received_total", factory: factory)
        messagesStored = CoreMetrics.Counter(label: "chat_messages_stored_total", factory: factory)
        messagesRateLimited = CoreMetrics.Counter(label: "chat_messages_throttled_total", dimensions: [("limit", "user_rate")],
                                      factory: factory)
        messagesOpenChannelThrottled = CoreMetrics.Counter(label: "chat_messages_throttled_total", dimensions: [("limit", "open_channel")],
                                               factory: factory)
        deliveries = CoreMetrics.Counter(label: "chat_deliveries_total", factory: factory)
        deliveriesSuppressedByBlocking = CoreMetrics.Counter(label: "chat_deliveries_suppressed_total", dimensions: [("reason", "blocked")],
                                                 factory: factory)
        slowConsumerCloses = CoreMetrics.Counter(label: "chat_slow_consumer_closes_total", factory: factory)
        acceptPauses = CoreMetrics.Counter(label: "chat_accept_pauses_total", factory: factory)
        requestsRefusedByRate = CoreMetrics.Counter(label: "chat_requests_refused_total", dimensions: [("reason", "rate")],
                                                    factory: factory)
        requestsRefusedInFlight = CoreMetrics.Counter(label: "chat_requests_refused_total", dimensions: [("reason", "in_flight")],
                                                      factory: factory)
        groupCommitBatchSize = CoreMetrics.Recorder(label: "chat_group_commit_batch_size", factory: factory)
        groupCommitLatency = CoreMetrics.Timer(label: "chat_group_commit_duration_seconds", factory: factory)
        fanOutLatency = CoreMetrics.Timer(label: "chat_fanout_duration_seconds", factory: factory)
        busEventsOut = CoreMetrics.Counter(label: "chat_bus_events_total", dimensions: [("direction", "out")], factory: factory)
        busEventsIn = CoreMetrics.Counter(label: "chat_bus_events_total", dimensions: [("direction", "in")], factory: factory)
        busStreamEventsIn = CoreMetrics.Counter(label: "chat_bus_stream_events_received_total", factory: factory)
        busFollowedChannels = CoreMetrics.Gauge(label: "chat_bus_followed_channels", factory: factory)
        busTypingIn = CoreMetrics.Counter(label: "chat_bus_typing_received_total", factory: factory)
        busResyncs = CoreMetrics.Counter(label: "chat_bus_resyncs_total", factory: factory)
        busEchoLatency = CoreMetrics.Timer(label: "chat_bus_echo_duration_seconds", factory: factory)
        busPayloadsRejectedSignature = CoreMetrics.Counter(label: "chat_bus_payloads_rejected_total",
                                                           dimensions: [("reason", "signature")], factory: factory)
        busPayloadsRejectedMalformed = CoreMetrics.Counter(label: "chat_bus_payloads_rejected_total",
                                                           dimensions: [("reason", "malformed")], factory: factory)
        busOutboxDropped = CoreMetrics.Counter(label: "chat_bus_outbox_dropped_total", factory: factory)
        redisTimeouts = CoreMetrics.Counter(label: "chat_redis_timeouts_total", factory: factory)
        typingStarts = CoreMetrics.Counter(label: "chat_typing_events_total", dimensions: [("event", "start")], factory: factory)
        typingStops = CoreMetrics.Counter(label: "chat_typing_events_total", dimensions: [("event", "stop")], factory: factory)
        readMarksStored = CoreMetrics.Counter(label: "chat_read_marks_total", dimensions: [("outcome", "stored")], factory: factory)
        readMarksFailed = CoreMetrics.Counter(label: "chat_read_marks_total", dimensions: [("outcome", "failed")], factory: factory)
        readEvents = CoreMetrics.Counter(label: "chat_read_events_total", factory: factory)
        presenceSubscriptions = CoreMetrics.Gauge(label: "chat_presence_subscriptions", factory: factory)
        for outcome in ["accepted", "400", "401", "403", "404", "408", "426", "429", "431", "503"] {
            handshake(outcome, count: 0)
        }
    }

    func connections(tls: Bool) -> CoreMetrics.Meter { tls ? connectionsTLS : connectionsPlain }

    /// A finished upgrade attempt: `accepted`, or the HTTP status it was refused with.
    /// An admin-API call answered with `status`.
    func adminRequest(status: Int) {
        CoreMetrics.Counter(label: "chat_admin_requests_total", dimensions: [("status", String(status))], factory: factory)
            .increment()
    }

    func handshake(_ outcome: String, count: Int64 = 1) {
        CoreMetrics.Counter(label: "chat_handshakes_total", dimensions: [("outcome", outcome)], factory: factory).increment(by: count)
    }

    /// Push events by sink (`file`, `webhook`) and outcome (`written`, `delivered`, `retried`, `dropped`, `failed`).
    func push(sink: String, outcome: String, count: Int) {
        CoreMetrics.Counter(label: "chat_push_events_total", dimensions: [("sink", sink), ("outcome", outcome)], factory: factory)
            .increment(by: Int64(count))
    }

    /// Unsent output of one loop's connections, as of its last sweep.
    func writeQueueBytes(loop: Int, bytes: Int) {
        CoreMetrics.Gauge(label: "chat_write_queue_bytes", dimensions: [("loop", String(loop))], factory: factory).record(bytes)
    }

    /// The Prometheus text exposition.
    /// What `/metrics` answers: every family with its `# HELP` line, then the process series.
    func exposition() -> [UInt8] {
        MetricHelp.annotate(registry.emitToBuffer() + ProcessMetrics.exposition())
    }
}
