import ArgumentParser
import Dispatch
import Foundation
import Gateway
import TerminalClient
import Logging

@main
struct ChatGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat-gateway",
        abstract: "Real-time chat gateway: WebSocket fan-out with per-recipient blocking.",
        version: GatewayVersion.description,
        subcommands: [Serve.self, CheckConfig.self, Token.self, Client.self],
        defaultSubcommand: Serve.self)
}

/// Options shared by the commands that read the configuration.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "JSON configuration file (default: Config/gateway.json when present).")
    var config: String?

    /// Loads and validates, or prints one line naming the key and exits with code 2.
    func load() throws -> GatewayConfiguration {
        let path = config ?? (FileManager.default.fileExists(atPath: "Config/gateway.json") ? "Config/gateway.json" : nil)
        do {
            return try GatewayConfiguration.load(filePath: path, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("chat-gateway: configuration error: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check-config", abstract: "Validate the configuration and exit.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let configuration = try options.load()
        let loops = configuration.server.eventLoops
        print("configuration OK (\(configuration.isTLS ? "wss" : "ws")://\(configuration.server.host):\(configuration.server.port), "
              + "\(loops) event loop\(loops == 1 ? "" : "s"))")
    }
}

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a client token signed with the configured secret.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "User id (the token's sub).")
    var user: String

    @Option(name: .long, help: "Lifetime in seconds.")
    var ttl: Int64 = 3600

    func run() async throws {
        let configuration = try options.load()
        print(try await ClientTokens.issue(secret: configuration.auth.jwtSecret, userID: user, ttlSeconds: ttl))
    }
}

struct Client: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A line-based terminal client: prints every event, sends commands.",
        discussion: TerminalClient.help)

    @Option(name: .long, help: "Gateway URL, e.g. ws://127.0.0.1:8080 (query parameters such as hideBlocked=1 are passed on).")
    var url: String = "ws://127.0.0.1:8080"

    @Option(name: .long, help: "Client token (see `chat-gateway token`).")
    var token: String

    func run() throws {
        guard let parsed = URL(string: url) else { throw ValidationError("invalid --url \(url)") }
        let status = try TerminalClient(url: parsed, token: token).run()
        // A refused token or an unreachable gateway is a failure for the shell too.
        if status != 0 { throw ExitCode(status) }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        GatewayLogging.bootstrap(level: configuration.log.level)
        let logger = Logger(label: "chat-gateway")
        let devSecrets = configuration.devSecretKeys
        if !devSecrets.isEmpty {
            let keys = devSecrets.map(\.key).joined(separator: ", ")
            let variables = devSecrets.map(\.environmentVariable).joined(separator: " and ")
            logger.warning("config.dev_secrets", metadata: [
                "keys": .array(devSecrets.map { .string($0.key) }),
                "detail": "\(keys) \(devSecrets.count == 1 ? "is" : "are") the published development default; set \(variables)",
            ])
        }
        let server: GatewayServer
        do {
            server = try await GatewayServer.make(configuration: configuration, logger: logger)
            try server.start()
        } catch {
            logger.critical("gateway.start_failed", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        ShutdownSignals.install(server: server, drainSeconds: Double(configuration.shutdown.drainSeconds), logger: logger)
        // Runs until a signal handler exits the process.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

/// SIGTERM/SIGINT start a drain; a second signal exits at once. The drain ends by stopping
/// every event loop (`quiesce`) before `exit`, whose handlers tear libcrypto down.
enum ShutdownSignals {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install(server: GatewayServer, drainSeconds: Double, logger: Logger) {
        let queue = DispatchQueue(label: "chat-gateway.signals")
        var draining = false
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
            source.setEventHandler {
                if draining {
                    logger.warning("gateway.exit", metadata: ["reason": "second signal"])
                    // The loops may be inside OpenSSL: leave without running exit handlers.
                    _exit(1)
                }
                draining = true
                server.drain(timeoutSeconds: drainSeconds) { remaining in
                    server.quiesce()
                    logger.info("gateway.exit", metadata: ["remainingConnections": .stringConvertible(remaining)])
                    exit(0)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
