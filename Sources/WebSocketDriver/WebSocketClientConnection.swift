import EventLoop
import WebSocket

/// The client role over one `SocketConnection` its owner connected: the upgrade request once
/// the socket is up, the server's answer checked (`WebSocketClientHandshake`), then frames both
/// ways, and keepalive when asked for. It owns no socket and no timer: the owner, a
/// `ConnectionHandler`, passes the socket in with the bytes it read and hears what they
/// mean, one `Event` at a time, in wire order, all the events of one read in one call (a
/// handler may send on the connection while it hears them). Lives on the socket's loop.
public final class WebSocketClientConnection {
    public enum Phase: Sendable, Equatable {
        /// Waiting for the socket, then for the server's answer.
        case upgrading
        case open
        /// The upgrade was refused, the WebSocket ended, or the owner closed it.
        case closed
    }

    public enum Event {
        /// The server accepted the upgrade, with the permessage-deflate it agreed to (nil: none).
        case opened(deflate: DeflateParameters?)
        /// The upgrade failed; the owner closes the socket as it sees fit.
        case refused(WebSocketClientHandshake.Refusal)
        case text([UInt8])
        case binary([UInt8])
        /// The WebSocket ended; the socket is already closing.
        case ended(Ending)
    }

    public enum Ending: Sendable, Equatable {
        /// The server's close frame (its code, nil when it sent none), answered.
        case closed(code: CloseCode?, reason: String)
        /// The server broke the protocol; a close frame with the error's code went out.
        case failed(WebSocketError)
        /// Keepalive: nothing came back within the pong timeout (`checkKeepalive`).
        case pingTimeout
    }

    public var phase: Phase { state }
    @usableFromInline var state = Phase.upgrading
    private var handshake: WebSocketClientHandshake
    @usableFromInline var webSocket: WebSocketConnection
    @usableFromInline var events: [WebSocketConnection.Event] = []
    /// Swapped with `events` while they are handled, so both keep their storage.
    @usableFromInline var spare: [WebSocketConnection.Event] = []
    @usableFromInline let maxMessageBytes: Int
    /// Inflates whole compressed messages for the connection (see `MessageInflater`).
    public var messageInflater: (any MessageInflater)?
    @usableFromInline var keepalive: WebSocketKeepalive?
    /// Bytes arrived since the last keepalive check; its time is the check's.
    @usableFromInline var receivedSinceCheck = true
    private var lastReceivedAt: UInt64 = 0

    /// `keepalive`, when given, counts in the unit of the `now` its owner passes to `checkKeepalive`.
    public init(handshake: WebSocketClientHandshake, maxMessageBytes: Int, keepalive: WebSocketKeepalive? = nil) {
        self.handshake = handshake
        self.maxMessageBytes = maxMessageBytes
        self.keepalive = keepalive
        webSocket = WebSocketConnection(role: .client, maxMessageBytes: maxMessageBytes)
        events.reserveCapacity(16)
        spare.reserveCapacity(16)
    }

    @inlinable
    public var isOpen: Bool { state == .open }

    /// The socket is up (`connectionDidConnect`): sends the upgrade request.
    public func start(on socket: SocketConnection) {
        socket.write(handshake.request)
    }

    /// Bytes the socket read: the server's answer to the upgrade, then frames. Pongs and
    /// the close handshake's answer are written to `socket` here.
    @inlinable
    public func receive(_ bytes: UnsafeRawBufferPointer, on socket: SocketConnection, _ handle: (Event) -> Void) {
        switch state {
        case .open:
            receiveFrames(bytes, on: socket, handle)
        case .upgrading:
            finishUpgrade(bytes, on: socket, handle)
        case .closed:
            break
        }
    }

    @usableFromInline
    func finishUpgrade(_ bytes: UnsafeRawBufferPointer, on socket: SocketConnection, _ handle: (Event) -> Void) {
        switch handshake.receive(bytes) {
        case .needMoreBytes:
            return
        case .refused(let refusal):
            state = .closed
            handle(.refused(refusal))
        case .accepted(let deflate, let leftover):
            state = .open
            if let deflate {
                webSocket = WebSocketConnection(role: .client, maxMessageBytes: maxMessageBytes, deflate: deflate)
                webSocket.messageInflater = messageInflater
            }
            receivedSinceCheck = true
            handle(.opened(deflate: deflate))
            if state == .open && !leftover.isEmpty {
                leftover.withUnsafeBytes { receiveFrames($0, on: socket, handle) }
            }
        }
    }

    @inlinable
    func receiveFrames(_ bytes: UnsafeRawBufferPointer, on socket: SocketConnection, _ handle: (Event) -> Void) {
        if keepalive != nil {
            keepalive?.received()
            receivedSinceCheck = true
        }
        webSocket.receive(bytes, events: &events)
        guard !events.isEmpty else { return }
        swap(&events, &spare)
        defer { spare.removeAll(keepingCapacity: true) }
        for index in spare.indices {
            switch spare[index] {
            case .text(let payload):
                if state == .open { handle(.text(payload)) }
            case .binary(let payload):
                if state == .open { handle(.binary(payload)) }
            case .send(let frame):
                socket.write(frame)
            case .ping, .pong:
                break
            case .closed(let code, let reason):
                guard state == .open else { break }
                state = .closed
                socket.close()
                handle(.ended(.closed(code: code, reason: reason)))
            case .failed(let error):
                guard state == .open else { break }
                state = .closed
                socket.close()
                handle(.ended(.failed(error)))
            }
        }
    }

    /// One text message (dropped unless open).
    @inlinable
    public func send(text: [UInt8], on socket: SocketConnection) {
        guard state == .open else { return }
        socket.write(webSocket.encodeText(text))
    }

    /// A text message framed here for an owner that builds it in place (see `MessageEncoder`).
    @inlinable
    public func encodeText(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
        webSocket.encodeText(payload)
    }

    /// Starts the close handshake and closes the socket once its output is written.
    public func close(code: CloseCode = .normal, reason: String = "", on socket: SocketConnection) {
        guard state == .open else { return }
        state = .closed
        if let frame = webSocket.encodeClose(code: code, reason: reason) { socket.write(frame) }
        socket.close()
    }

    /// The owner's periodic keepalive check at `now` (in the keepalive's unit; an owner checks
    /// several times per idle period). A ping goes out when the connection was quiet for
    /// `idle`; when its answer is overdue the connection is dropped at once (the server is
    /// presumed gone) and `.ended(.pingTimeout)` returned.
    public func checkKeepalive(now: UInt64, on socket: SocketConnection) -> Event? {
        guard state == .open, var keepalive else { return nil }
        if receivedSinceCheck {
            receivedSinceCheck = false
            lastReceivedAt = now
        }
        let action = keepalive.check(now: now, lastReceivedAt: lastReceivedAt)
        self.keepalive = keepalive
        switch action {
        case .sendPing:
            socket.write(webSocket.encodePing())
            return nil
        case .close(let code, let reason):
            state = .closed
            if let frame = webSocket.encodeClose(code: code, reason: reason) { socket.write(frame) }
            socket.closeNow()
            return .ended(.pingTimeout)
        case nil:
            return nil
        }
    }
}
