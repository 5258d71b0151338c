/// What runs on top of a server's upgraded connection. Every call happens on the
/// connection's event loop.
public protocol WebSocketServerApplication: AnyObject {
    func webSocketDidOpen(_ connection: WebSocketServerConnection)
    func webSocket(_ connection: WebSocketServerConnection, didReceiveText bytes: [UInt8])
    func webSocket(_ connection: WebSocketServerConnection, didReceiveBinary bytes: [UInt8])
    func webSocketDidClose(_ connection: WebSocketServerConnection)
    /// Once a second, from the loop's sweep.
    func webSocketTick(_ connection: WebSocketServerConnection)
}

extension WebSocketServerApplication {
    public func webSocketDidOpen(_ connection: WebSocketServerConnection) {}
    public func webSocketTick(_ connection: WebSocketServerConnection) {}
}
