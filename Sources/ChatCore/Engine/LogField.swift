/// A value of an operations-log line the engine asks for: text, or a number that the log
/// keeps a JSON number (so `jq 'select(.retryAfterMs > 500)'` works).
public enum LogField: Sendable, Equatable, ExpressibleByStringLiteral {
    case text(String)
    case number(Int64)

    public init(stringLiteral value: String) {
        self = .text(value)
    }
}
