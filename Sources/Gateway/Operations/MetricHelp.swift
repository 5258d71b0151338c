/// The `# HELP` line of every metric family the gateway exposes (docs/operations.md,
/// "Metrics", says the same at more length), put before each family's `# TYPE` line when
/// `/metrics` is scraped: the metrics are made through swift-metrics, which carries no help
/// text. A family without an entry here is a test failure (`MetricsExpositionTests`).
enum MetricHelp {
    static let texts: [String: String] = [
        "chat_connections": "Live WebSocket connections, by transport (ws, wss).",
        "chat_admin_requests_total": "Admin-API calls, by HTTP status.",
        "chat_handshakes_total": "WebSocket upgrades: accepted, or the HTTP status or close code they were refused with.",
        "chat_messages_received_total": "message.send requests received.",
        "chat_messages_stored_total": "Messages committed to the store.",
        "chat_messages_throttled_total": "Sends refused by the user rate, or stored but not delivered live (open_channel).",
        "chat_deliveries_total": "message.new frames queued to connections.",
        "chat_deliveries_suppressed_total": "Deliveries withheld, by reason (blocked).",
        "chat_push_events_total": "Push events, by sink and outcome.",
        "chat_write_queue_bytes": "Unsent output per event loop, in bytes.",
        "chat_slow_consumer_closes_total": "Connections closed for leaving too much output unsent (4000).",
        "chat_requests_refused_total": "Requests refused by their connection's budget, by reason (rate, in_flight).",
        "chat_accept_pauses_total": "Pauses of the listener for want of file descriptors or memory.",
        "chat_group_commit_batch_size": "Writes per store transaction.",
        "chat_group_commit_duration_seconds": "Time from BEGIN to COMMIT per store batch.",
        "chat_bus_events_total": "Cluster bus events received (in) and published (out).",
        "chat_bus_stream_events_received_total": "Cluster bus events received off the streams of followed chat channels.",
        "chat_bus_typing_received_total": "Typing changes heard off the cluster bus.",
        "chat_bus_followed_channels": "Chat channels whose bus streams this node hears.",
        "chat_bus_echo_duration_seconds": "Cluster bus lag: from publishing a write to its being ordered.",
        "chat_bus_resyncs_total": "Times this node sent session.resync after a bus outage.",
        "chat_bus_payloads_rejected_total": "Bus payloads dropped unapplied, by reason (signature, malformed).",
        "chat_bus_outbox_dropped_total": "Committed events dropped from a full bus outbox.",
        "chat_redis_timeouts_total": "Redis connections closed because a command or an echo went unanswered.",
        "chat_fanout_duration_seconds": "Time from commit to the last frame queued on a loop, per message and loop.",
        "chat_typing_events_total": "Typing events sent out, by event (start, stop).",
        "chat_read_marks_total": "channel.markRead writes, by outcome (stored, failed).",
        "chat_read_events_total": "channel.read events sent out.",
        "chat_presence_subscriptions": "Users followed with presence.subscribe, summed over this node's connections.",
        "chat_build_info": "The running build: release and protocol version (always 1).",
        "process_start_time_seconds": "Start time of the process since the Unix epoch, in seconds.",
        "process_cpu_seconds_total": "User and system CPU time of the process, in seconds.",
        "process_resident_memory_bytes": "Resident memory of the process, in bytes.",
        "process_open_fds": "Open file descriptors of the process.",
        "process_max_fds": "The process's limit of open file descriptors.",
    ]

    /// `exposition` with a `# HELP` line before each `# TYPE` line that has a text here.
    static func annotate(_ exposition: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(exposition.count + texts.count * 80)
        let typePrefix = Array("# TYPE ".utf8)
        var start = 0
        while start < exposition.count {
            var end = start
            while end < exposition.count && exposition[end] != UInt8(ascii: "\n") { end += 1 }
            let line = exposition[start..<end]
            if line.starts(with: typePrefix) {
                let rest = line.dropFirst(typePrefix.count)
                let name = String(decoding: rest.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = texts[name] { out += Array("# HELP \(name) \(help)\n".utf8) }
            }
            out += line
            out.append(UInt8(ascii: "\n"))
            start = end + 1
        }
        return out
    }
}
