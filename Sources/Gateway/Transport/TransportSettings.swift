import EventLoop

/// What the transport needs from the configuration.
struct TransportSettings: Sendable {
    struct Timeouts: Sendable {
        /// Seconds a client may take to send its upgrade request.
        var handshake: UInt64 = 10
        /// Seconds a connection keeps its handshake turn (`limits.handshakesAtOnce`) while
        /// still handshaking: long enough for any client that is not stalling, short enough
        /// that stalling connections do not hold new arrivals back for the whole handshake
        /// timeout. It keeps the rest of that timeout.
        var handshakeTurn: UInt64 = 2
        /// Seconds of silence before a ping.
        var idle: UInt64 = 60
        /// Seconds to wait for any answer to that ping.
        var pongTimeout: UInt64 = 30
        /// Seconds to wait for the peer's close after ours.
        var close: UInt64 = 5
    }

    var host = "127.0.0.1"
    var port = 8080
    var eventLoops = 1
    var certificateFile: String?
    var privateKeyFile: String?
    /// `tls.ticketKeyRotationSeconds`: session tickets under keys rotated this often; 0 = no tickets.
    var ticketKeyRotationSeconds = 3600
    var maxMessageBytes = 65536
    /// `limits.maxQueuedOutputBytes` and `limits.slowConsumerSeconds`, for every accepted connection.
    var outputBound = OutputBound()
    var timeouts = Timeouts()
    /// `limits.handshakesAtOnce`: each loop's bound on connections in their opening handshake (0: none).
    var handshakesAtOnce = 0
    /// Each loop's bound on the bytes clients sent behind upgrade requests still being
    /// decided (each is also bound by one frame of `maxMessageBytes`): past it the
    /// connection whose bytes do not fit is closed. 0: none.
    var heldBeforeUpgradeBytesPerLoop = 32 << 20
    var echoEnabled = false
    /// `console.enabled`: `/console` serves the web console (a chat gateway only).
    var consoleEnabled = true
}
