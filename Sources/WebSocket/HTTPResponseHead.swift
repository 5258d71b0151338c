/// The head of an HTTP/1.1 response, client side (the upgrade's 101, admin API
/// answers): status, headers, and where the body starts.
public struct HTTPResponseHead: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    /// Bytes of the head including the blank line; the body starts here.
    public var byteCount: Int

    /// The first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    public var contentLength: Int? { header("Content-Length").flatMap { Int($0) } }

    /// The head at the start of `bytes`; nil while the blank line has not arrived.
    public static func parse(_ bytes: [UInt8]) -> HTTPResponseHead? {
        guard bytes.count >= 4 else { return nil }
        var end = -1
        for i in 0...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            end = i
            break
        }
        guard end >= 0 else { return nil }
        let text = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        let statusLine = lines.popFirst() ?? ""
        let status = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingSpaces
            let value = line[line.index(after: colon)...].trimmingSpaces
            headers.append((String(name), String(value)))
        }
        return HTTPResponseHead(status: status, headers: headers, byteCount: end + 4)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return s
    }
}
