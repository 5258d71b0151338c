/// How `ChatClient` reaches the gateway: one WebSocket at a time, text messages both ways.
/// `WebSocketTransport` is the Linux implementation on this package's event loop; an Apple
/// app can plug in one over `URLSessionWebSocketTask` (see docs/clients.md).
public protocol ChatTransport: Sendable {
    /// Opens a WebSocket to `url` (`ws://` or `wss://`, with path and query). Throws
    /// `ChatClientError` with `.handshakeRefused` when the server answers the upgrade with an
    /// HTTP error (its status and `ERR_*` code), `.connectionFailed` when it cannot be reached.
    func connect(to url: String) async throws -> any ChatTransportConnection
}

/// One open WebSocket.
public protocol ChatTransportConnection: AnyObject, Sendable {
    /// What arrives, in order: text messages, then `.closed` once (and the stream ends).
    var events: AsyncStream<TransportEvent> { get }
    /// Queues one text message (dropped if the connection is closed).
    func send(_ text: String)
    /// Closes with 1000; `.closed` follows.
    func close()
}

public enum TransportEvent: Sendable, Equatable {
    case text(String)
    /// The connection ended: the close code the server sent (nil when the socket just went away).
    case closed(code: Int?, reason: String)
}
