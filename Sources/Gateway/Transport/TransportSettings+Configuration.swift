import EventLoop

extension TransportSettings {
    init(_ configuration: GatewayConfiguration) {
        host = configuration.server.host
        port = configuration.server.port
        eventLoops = configuration.server.eventLoops
        certificateFile = configuration.tls.certificateFile
        privateKeyFile = configuration.tls.privateKeyFile
        ticketKeyRotationSeconds = configuration.tls.ticketKeyRotationSeconds
        maxMessageBytes = configuration.limits.maxMessageBytes
        outputBound = OutputBound(maxUnsentBytes: configuration.limits.maxQueuedOutputBytes,
                                  windowTicks: UInt64(configuration.limits.slowConsumerSeconds))
        timeouts = Timeouts(
            handshake: UInt64(configuration.limits.handshakeTimeoutSeconds),
            idle: UInt64(configuration.limits.idleTimeoutSeconds),
            pongTimeout: UInt64(configuration.limits.pongTimeoutSeconds),
            close: UInt64(configuration.limits.closeTimeoutSeconds))
        handshakesAtOnce = configuration.limits.handshakesAtOnce
        echoEnabled = configuration.conformance.echo
        consoleEnabled = configuration.console.enabled
    }
}
