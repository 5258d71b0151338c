import EventLoop

/// What the transport needs from the configuration.
struct TransportSettings: Sendable {
    struct Timeouts: Sendable {
        /// Seconds a client may take to send its upgrade request.
        var handshake: UInt64 = 10
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
    var echoEnabled = false
}
