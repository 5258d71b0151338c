import EventLoop
import WebSocket

/// The server role on an upgraded connection: drives the sans-IO `WebSocketConnection` with
/// the bytes of a `SocketConnection`, hands messages to the application, and keeps the
/// connection alive with `WebSocketKeepalive` on the loop's ticks.
public final class WebSocketServerConnection {
    public let socket: SocketConnection
    /// Replaced at most by `handOver`.
    public private(set) var application: any WebSocketServerApplication
    @usableFromInline var protocolState: WebSocketConnection
    private var events: [WebSocketConnection.Event] = []
    private var keepalive: WebSocketKeepalive
    /// The close code once the close handshake began.
    public private(set) var closeCode: CloseCode?
    /// Set once a close frame was queued: nothing may follow it on the wire.
    @usableFromInline var outputClosed = false

    /// `keepalive` counts in the loop's ticks (seconds).
    public init(socket: SocketConnection, protocolState: WebSocketConnection, application: any WebSocketServerApplication,
                keepalive: WebSocketKeepalive) {
        self.socket = socket
        self.protocolState = protocolState
        self.application = application
        self.keepalive = keepalive
    }

    /// Events are handled in wire order, so a message that arrived before a
    /// close or a protocol error is still answered before the close frame.
    @inlinable
    public var isOpen: Bool { !outputClosed && socket.state == .open }

    public func receive(_ bytes: UnsafeRawBufferPointer) {
        keepalive.received()
        protocolState.receive(bytes, events: &events)
        guard !events.isEmpty else { return }
        for event in events {
            switch event {
            case .text(let payload):
                if isOpen { application.webSocket(self, didReceiveText: payload) }
            case .binary(let payload):
                if isOpen { application.webSocket(self, didReceiveBinary: payload) }
            case .send(let bytes):
                socket.write(bytes)
            case .ping, .pong:
                break
            case .closed(let code, _):
                outputClosed = true
                closeCode = code ?? .normal
                socket.close()
            case .failed(let error):
                outputClosed = true
                closeCode = error.code
                socket.close()
            }
        }
        events.removeAll(keepingCapacity: events.capacity <= 16)
    }

    /// From now on `application` gets every message, tick and the close.
    public func handOver(to application: any WebSocketServerApplication) {
        self.application = application
    }

    public func send(text: [UInt8]) {
        guard isOpen else { return }
        socket.write(protocolState.encodeText(text))
    }

    /// Sends a message framed once for many connections: its shared frame, or its shared
    /// compressed frame when this connection's deflate settings allow one.
    @inlinable
    public func send(_ message: PreparedMessage) {
        guard isOpen else { return }
        if protocolState.deflate == nil {
            socket.write(message.frame)
        } else if let bits = protocolState.sharedCompressionWindowBits(payloadCount: message.payload.count),
                  let shared = message.compressedFrame(windowBits: bits) {
            socket.write(shared)
        } else {
            socket.write(protocolState.encodeText(message.payload))
        }
    }

    public func send(binary: [UInt8]) {
        guard isOpen else { return }
        socket.write(protocolState.encodeBinary(binary))
    }

    /// Starts the close handshake; the socket closes when the peer answers or the close timeout passes.
    public func close(code: CloseCode, reason: String) {
        guard let frame = protocolState.encodeClose(code: code, reason: reason) else { return }
        outputClosed = true
        closeCode = code
        socket.write(frame)
        socket.close()
    }

    /// The loop's once-a-second check: the application's tick, then keepalive.
    public func tick(_ tick: UInt64) {
        guard protocolState.state == .open else { return }
        application.webSocketTick(self)
        guard protocolState.state == .open else { return }
        switch keepalive.check(now: tick, lastReceivedAt: socket.lastReadTick) {
        case .sendPing:
            socket.write(protocolState.encodePing())
        case .close(let code, let reason):
            close(code: code, reason: reason)
        case nil:
            break
        }
    }
}
