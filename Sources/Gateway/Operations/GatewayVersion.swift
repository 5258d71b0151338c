/// What `chat-gateway --version` prints: the gateway's release and the wire protocol it
/// speaks (docs/PROTOCOL.md), so an operator can tell which build a node runs and which
/// clients it serves.
public enum GatewayVersion {
    public static let release = "0.1.0"
    public static let protocolVersion = "1.2"
    public static var description: String { "chat-gateway \(release) (protocol \(protocolVersion))" }
}
