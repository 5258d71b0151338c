/// Bytes a loop's connections keep in memory on behalf of work that is not theirs to
/// finish (a request waiting for a decision keeps what its client sent behind it). A
/// holder reserves before it keeps bytes and releases them when it lets go; one whose
/// reservation is refused must drop them (its owner closes it), so a loop never holds
/// more than `limit` this way, however many of its connections are waiting.
public struct HeldInputBudget: Sendable {
    /// 0: unbounded.
    public var limit: Int
    public private(set) var held = 0

    public init(limit: Int = 0) {
        self.limit = limit
    }

    /// Takes `bytes` from the budget; false (and nothing taken) when they do not fit.
    public mutating func reserve(_ bytes: Int) -> Bool {
        guard bytes >= 0, limit == 0 || bytes <= limit - held else { return false }
        held += bytes
        return true
    }

    public mutating func release(_ bytes: Int) {
        held -= min(max(bytes, 0), held)
    }
}
