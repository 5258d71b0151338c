/// A parsed JSON document. Numbers keep their lexeme so a client's request
/// `id` is echoed exactly as sent; objects keep key order so `data` round-trips.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The number as an exact integer, if it is one (no fraction, no exponent, fits 64 bits).
    public var int64Value: Int64? {
        guard case .number(let lexeme) = self else { return nil }
        return Int64(lexeme)
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

/// A JSON object with its keys in document order. A repeated key resolves to its last value.
public struct JSONObject: Sendable, Equatable {
    public var entries: [(key: String, value: JSONValue)]

    public init(_ entries: [(key: String, value: JSONValue)] = []) {
        self.entries = entries
    }

    public subscript(key: String) -> JSONValue? {
        entries.last(where: { $0.key == key })?.value
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.entries.elementsEqual(rhs.entries) { $0.key == $1.key && $0.value == $1.value }
    }
}
