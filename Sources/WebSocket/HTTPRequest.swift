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
        var items: [(name: String, value: String)] = []
        forEachQueryItem { name, value in
            items.append((Self.percentDecoded(name), Self.percentDecoded(value)))
            return true
        }
        return items
    }

    /// The first value of the query parameter `name`; only that value is decoded.
    public func queryValue(_ name: String) -> String? {
        var found: String?
        forEachQueryItem { itemName, value in
            guard Self.percentDecoded(itemName) == name else { return true }
            found = Self.percentDecoded(value)
            return false
        }
        return found
    }

    /// Calls `body` with each non-empty `name=value` of the query, as sent (not decoded), in
    /// order, until it answers false. Works on the UTF-8 bytes: a token is hundreds of
    /// characters, and walking them as `Character`s cost a connect more than its JWT check.
    private func forEachQueryItem(_ body: (Substring.UTF8View, Substring.UTF8View) -> Bool) {
        let bytes = target.utf8
        guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return }
        var start = bytes.index(after: question)
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            if start < end {
                let pair = bytes[start..<end]
                let proceed = if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                    body(pair[..<equals], pair[pair.index(after: equals)...])
                } else {
                    body(pair, pair[pair.endIndex...])
                }
                if !proceed { return }
            }
            start = end < bytes.endIndex ? bytes.index(after: end) : end
        }
    }

    /// The first value of a header, names compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first(where: { Self.sameName($0.name, name) })?.value
    }

    /// Every value of a header.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Whether a comma-separated header holds `token` (case-insensitive).
    public func headerContainsToken(_ name: String, _ token: String) -> Bool {
        let wanted = token.lowercased()
        return headerValues(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingASCIISpaces().lowercased() == wanted }
        }
    }

    /// Header names compared as HTTP does (ASCII letters without case), without making
    /// lowercased copies of every name on every lookup.
    static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(x | 0x20))
        }
    }

    static func percentDecoded(_ text: Substring.UTF8View) -> String {
        guard text.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return String(Substring(text))
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            let next = text.index(after: index)
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), next < text.endIndex, text.index(after: next) < text.endIndex,
                      let high = hexValue(text[next]), let low = hexValue(text[text.index(after: next)]) {
                bytes.append(high << 4 | low)
                index = text.index(after: text.index(after: next))
                continue
            } else {
                bytes.append(byte)
            }
            index = next
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
