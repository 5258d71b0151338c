import ArgumentParser

/// Where the gateway is and how to reach it: shared by every scenario.
struct GatewayOptions: ParsableArguments {
    @Option(help: "Gateway WebSocket URL, ws://HOST:PORT or wss://HOST:PORT.")
    var url: String

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
        guard (1...64).contains(loops) else { throw ValidationError("--loops must be 1…64") }
        guard adminConcurrency >= 1 else { throw ValidationError("--admin-concurrency must be positive") }
    }
}
