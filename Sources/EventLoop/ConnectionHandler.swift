/// What a connection reports to the layer above. Every call happens on the
/// connection's event loop.
public protocol ConnectionHandler: AnyObject {
    /// Plaintext from the peer (TLS already removed); valid only during the call.
    func connection(_ connection: SocketConnection, didRead bytes: UnsafeRawBufferPointer)
    /// An accepted connection's turn to handshake came (`SocketConnection.accepted`): from
    /// now on its bytes are read.
    func connectionMayStart(_ connection: SocketConnection)
    /// A client connection finished connecting (and its TLS handshake).
    func connectionDidConnect(_ connection: SocketConnection)
    /// Called about once a second by the loop's sweep, with the loop's tick.
    func connectionTick(_ connection: SocketConnection, tick: UInt64)
    /// The connection is gone; the last call the handler receives.
    func connectionDidClose(_ connection: SocketConnection)
    /// The peer is too slow for the connection's `OutputBound`: close it (once).
    func connectionIsSlow(_ connection: SocketConnection)
    /// Everything queued was written, and the handler asked to hear it (`notifiesWhenDrained`).
    func connectionDidDrain(_ connection: SocketConnection)
}

extension ConnectionHandler {
    public func connectionMayStart(_ connection: SocketConnection) {}
    public func connectionDidConnect(_ connection: SocketConnection) {}
    public func connectionTick(_ connection: SocketConnection, tick: UInt64) {}
    public func connectionIsSlow(_ connection: SocketConnection) { connection.closeNow() }
    public func connectionDidDrain(_ connection: SocketConnection) {}
}
