/// A violation that ends the connection with a close frame carrying `code`.
public struct WebSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: CloseCode
    public var reason: String

    public init(_ code: CloseCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue) \(reason)" }

    static func protocolError(_ reason: String) -> WebSocketError { .init(.protocolError, reason) }
}
