import EventLoop
import WebSocket

/// An upgraded connection: drives the sans-IO `WebSocketConnection` with the
/// bytes of a `SocketConnection` and hands messages to the application.
final class WebSocketChannel {
    let socket: SocketConnection
    /// Replaced once at most: by the session an `auth` message opened (`handOver`).
    private(set) var application: any WebSocketApplication
    private var protocolState: WebSocketConnection
    private var events: [WebSocketConnection.Event] = []
    let timeouts: TransportSettings.Timeouts
    private var pingSentTick: UInt64?
    /// The close code once the close handshake began.
    private(set) var closeCode: CloseCode?
    /// Set once a close frame was queued: nothing may follow it on the wire.
    private var outputClosed = false

    init(socket: SocketConnection, protocolState: WebSocketConnection, application: any WebSocketApplication,
         timeouts: TransportSettings.Timeouts) {
        self.socket = socket
        self.protocolState = protocolState
        self.application = application
        self.timeouts = timeouts
    }

    /// Events are handled in wire order, so a message that arrived before a
    /// close or a protocol error is still answered before the close frame.
    var isOpen: Bool { !outputClosed && socket.state == .open }

    func receive(_ bytes: UnsafeRawBufferPointer) {
        pingSentTick = nil
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

    /// From now on `application` gets every message, tick and the close (PROTOCOL.md §1: the
    /// session an `auth` message opened takes over from `AwaitingAuthSession`).
    func handOver(to application: any WebSocketApplication) {
        self.application = application
    }

    func send(text: [UInt8]) {
        guard isOpen else { return }
        socket.write(protocolState.encodeText(text))
    }

    /// Sends a text message that many connections share: its prebuilt frame as is, or,
    /// when this connection negotiated deflate, the compressed frame for its window bits
    /// that `compressed` builds once for all of them.
    /// Sends a message framed once for many connections: its shared frame, or its shared
    /// compressed frame when this connection's deflate settings allow one.
    func send(_ message: PreparedMessage) {
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

    func send(binary: [UInt8]) {
        guard isOpen else { return }
        socket.write(protocolState.encodeBinary(binary))
    }

    /// Starts the close handshake; the socket closes when the peer answers or the close timeout passes.
    func close(code: CloseCode, reason: String) {
        guard let frame = protocolState.encodeClose(code: code, reason: reason) else { return }
        outputClosed = true
        closeCode = code
        socket.write(frame)
        socket.close()
    }

    /// Idle check, once a second: ping after `idle`, give up `pong` seconds later.
    func tick(_ tick: UInt64) {
        guard protocolState.state == .open else { return }
        application.webSocketTick(self)
        guard protocolState.state == .open else { return }
        if let sent = pingSentTick {
            if tick >= sent + timeouts.pongTimeout {
                close(code: .goingAway, reason: "ping timeout")
            }
        } else if tick >= socket.lastReadTick + timeouts.idle {
            pingSentTick = tick
            socket.write(protocolState.encodePing())
        }
    }
}
