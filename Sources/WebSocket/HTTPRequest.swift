/// An HTTP/1.1 request as read off the wire: the upgrade request, or a plain
/// request for `/healthz`, `/metrics` and the admin API.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The request target as sent, e.g. `/v1/ws?token=abc`.
    public var target: String
    public var version: String
    /// Header fields in arrival order; names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, target: String, version: String = "HTTP/1.1",
                headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// The target up to `?`.
    public var path: String {
        if let q = target.firstIndex(of: "?") { return String(target[..<q]) }
        return target
    }

    /// Percent-decoded query parameters in order.
    public var queryItems: [(name: String, value: String)] {
        guard let q = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: q)...].split(separator: "&").map { pair in
            if let eq = pair.firstIndex(of: "=") {
                return (Self.percentDecoded(pair[..<eq]), Self.percentDecoded(pair[pair.index(after: eq)...]))
            }
            return (Self.percentDecoded(pair), "")
        }
    }

    public func queryValue(_ name: String) -> String? {
        queryItems.first(where: { $0.name == name })?.value
    }

    /// The first value of a header, names compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first(where: { $0.name.lowercased() == name.lowercased() })?.value
    }

    /// Every value of a header.
    public func headerValues(_ name: String) -> [String] {
        let lower = name.lowercased()
        return headers.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    /// Whether a comma-separated header holds `token` (case-insensitive).
    public func headerContainsToken(_ name: String, _ token: String) -> Bool {
        let wanted = token.lowercased()
        return headerValues(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingASCIISpaces().lowercased() == wanted }
        }
    }

    static func percentDecoded(_ text: Substring) -> String {
        guard text.contains("%") || text.contains("+") else { return String(text) }
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), iterator.count >= 2,
                      let high = hexValue(iterator[iterator.startIndex]),
                      let low = hexValue(iterator[iterator.startIndex + 1]) {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
