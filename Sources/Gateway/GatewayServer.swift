import Dispatch
import EventLoop
import Logging

/// The running gateway: event loops, the listener and (when configured) TLS.
public final class GatewayServer: @unchecked Sendable {
    public let group: EventLoopGroup
    private var listener: Listener?
    private let settings: TransportSettings
    private let tls: TLSContext?
    private let logger: Logger

    public convenience init(configuration: GatewayConfiguration, logger: Logger) throws {
        try self.init(settings: TransportSettings(configuration), logger: logger)
    }

    init(settings: TransportSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        group = EventLoopGroup(count: settings.eventLoops)
        if let certificate = settings.certificateFile, let key = settings.privateKeyFile {
            tls = try TLSContext.server(certificateFile: certificate, privateKeyFile: key)
        } else {
            tls = nil
        }
    }

    /// Binds and starts accepting; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        let router = HTTPRouter(echoEnabled: settings.echoEnabled)
        let observer = ConnectionObserver(logger: logger)
        let settings = self.settings
        let tls = self.tls
        let listener = try Listener(host: settings.host, port: settings.port, group: group) { fd, loop in
            let handler = HTTPConnectionHandler(router: router, settings: settings, observer: observer, tick: loop.tick)
            let connection = SocketConnection.accepted(fd: fd, loop: loop, tls: tls, handler: handler)
            connection?.closeTimeoutTicks = settings.timeouts.close
        }
        listener.start()
        self.listener = listener
        logger.info("gateway.start", metadata: [
            "host": "\(settings.host)", "port": "\(listener.port)",
            "transport": "\(tls == nil ? "ws" : "wss")", "eventLoops": "\(group.loops.count)",
        ])
        return listener.port
    }

    public var port: Int? { listener?.port }

    /// Stops accepting, sends every WebSocket a close 1001 and calls `completion`
    /// once every connection is gone or `timeoutSeconds` have passed.
    public func drain(timeoutSeconds: Double, completion: @escaping @Sendable (_ remaining: Int) -> Void) {
        listener?.stop()
        listener = nil
        logger.info("gateway.drain", metadata: ["timeoutSeconds": "\(timeoutSeconds)"])
        for loop in group.loops {
            loop.execute {
                for connection in Array(loop.liveConnections) {
                    if let handler = connection.handler as? HTTPConnectionHandler {
                        handler.goAway(connection)
                    } else {
                        connection.closeNow()
                    }
                }
            }
        }
        let deadline = DispatchTime.now() + timeoutSeconds
        let group = self.group
        @Sendable func poll() {
            let remaining = group.loops.reduce(0) { total, loop in total + loop.queue.sync { loop.connectionCount } }
            if remaining == 0 || DispatchTime.now() >= deadline {
                completion(remaining)
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.05, execute: poll)
            }
        }
        DispatchQueue.global().async(execute: poll)
    }

    /// Stops accepting and closes every connection at once.
    public func stop() {
        listener?.stop()
        listener = nil
        for loop in group.loops {
            loop.queue.sync {
                for connection in Array(loop.liveConnections) { connection.closeNow() }
            }
        }
    }
}
