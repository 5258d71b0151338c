import ArgumentParser

/// Where the gateway is and how to reach it: shared by every scenario.
struct GatewayOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Gateway WebSocket URL, ws://HOST:PORT or wss://HOST:PORT; repeat it for the nodes of a cluster.",
                               discussion: "Member connections go to the nodes round-robin (member i to URL i mod N); the admin API and everything else use the first."))
    var url: [String]

    @Option(name: .customLong("admin-key"), help: "The gateway's admin.apiKey.")
    var adminKey: String

    @Flag(help: "Use TLS (wss) even with a ws:// URL.")
    var tls = false

    @Flag(help: "Offer permessage-deflate (server_no_context_takeover; client_no_context_takeover) on every connection.")
    var deflate = false

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    @Option(help: "Event loops (threads) of the tool.")
    var loops = 1

    @Option(name: .customLong("admin-concurrency"), help: "Admin API requests in flight while provisioning.")
    var adminConcurrency = 16

    func validate() throws {
        guard !url.isEmpty else { throw ValidationError("--url is required") }
        guard (1...64).contains(loops) else { throw ValidationError("--loops must be 1…64") }
        guard adminConcurrency >= 1 else { throw ValidationError("--admin-concurrency must be positive") }
    }
}
