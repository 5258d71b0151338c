/// Incremental HTTP/1.1 request parser with hard bounds: the header block may
/// not pass `maxHeaderBytes` or `maxHeaderLines` (→ 431), a body is read by
/// `Content-Length` up to `maxBodyBytes` (→ 413). Bytes that follow the request
/// (frames a client sent right after its upgrade) are kept in `leftover`.
public struct HTTPRequestParser: Sendable {
    public struct Failure: Error, Equatable, Sendable {
        public var status: Int
        public var message: String
    }

    public let maxHeaderBytes: Int
    public let maxHeaderLines: Int
    public let maxBodyBytes: Int

    private var buffer: [UInt8] = []
    private var pendingHead: HTTPRequest?
    private var bodyLength = 0
    /// How much of `buffer` was already searched for the blank line, and the
    /// newlines in that part: each read scans only its new bytes, so a client
    /// trickling its headers byte by byte costs linear, not quadratic, time.
    private var scanned = 0
    private var newlines = 0
    /// Bytes received after the end of the request.
    public private(set) var leftover: [UInt8] = []

    public init(maxHeaderBytes: Int = 8192, maxHeaderLines: Int = 100, maxBodyBytes: Int = 1 << 20) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderLines = maxHeaderLines
        self.maxBodyBytes = maxBodyBytes
    }

    /// Bytes buffered so far.
    public var bufferedByteCount: Int { buffer.count }

    /// Feeds bytes; returns the request once complete.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> HTTPRequest? {
        buffer.append(contentsOf: bytes)
        if var head = pendingHead {
            guard buffer.count >= bodyLength else { return nil }
            head.body = Array(buffer[..<bodyLength])
            leftover = Array(buffer[bodyLength...])
            buffer = []
            pendingHead = nil
            return head
        }
        guard let end = Self.headerEnd(in: buffer, from: max(scanned - 3, 0)) else {
            newlines += Self.countLines(buffer[scanned...])
            scanned = buffer.count
            // Up to 3 bytes of the blank line's CRLFCRLF may already be here and do not
            // count, so a block of exactly maxHeaderBytes passes whatever the read sizes.
            if buffer.count - 3 > maxHeaderBytes {
                throw Failure(status: 431, message: "request headers over \(maxHeaderBytes) bytes")
            }
            if newlines > maxHeaderLines + 1 {
                throw Failure(status: 431, message: "more than \(maxHeaderLines) header lines")
            }
            return nil
        }
        if end > maxHeaderBytes {
            throw Failure(status: 431, message: "request headers over \(maxHeaderBytes) bytes")
        }
        var head = try parseHead(buffer[..<end])
        let rest = Array(buffer[(end + 4)...])
        buffer = []
        scanned = 0
        newlines = 0
        if head.header("transfer-encoding") != nil {
            throw Failure(status: 400, message: "Transfer-Encoding is not supported; send Content-Length")
        }
        if let lengthText = head.header("content-length") {
            guard let length = Int(lengthText.trimmingASCIISpaces()), length >= 0 else {
                throw Failure(status: 400, message: "invalid Content-Length")
            }
            guard length <= maxBodyBytes else {
                throw Failure(status: 413, message: "body over \(maxBodyBytes) bytes")
            }
            if length > 0 {
                if rest.count >= length {
                    head.body = Array(rest[..<length])
                    leftover = Array(rest[length...])
                    return head
                }
                pendingHead = head
                bodyLength = length
                buffer = rest
                return nil
            }
        }
        leftover = rest
        return head
    }

    private func parseHead(_ bytes: ArraySlice<UInt8>) throws(Failure) -> HTTPRequest {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line -> ArraySlice<UInt8> in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        guard let requestLine = lines.first else { throw Failure(status: 400, message: "empty request") }
        if lines.count - 1 > maxHeaderLines {
            throw Failure(status: 431, message: "more than \(maxHeaderLines) header lines")
        }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[0].allSatisfy({ Self.isTokenByte($0) }) else {
            throw Failure(status: 400, message: "malformed request line")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            throw Failure(status: 400, message: "unsupported HTTP version")
        }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[line.startIndex..<colon].allSatisfy({ Self.isTokenByte($0) }) else {
                throw Failure(status: 400, message: "malformed header line")
            }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingASCIISpaces()
            headers.append((name, value))
        }
        return HTTPRequest(
            method: String(decoding: parts[0], as: UTF8.self),
            target: String(decoding: parts[1], as: UTF8.self),
            version: version, headers: headers)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Index of the blank line's `\r\n\r\n`.
    private static func headerEnd(in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count - start >= 4 else { return nil }
        for i in start...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    private static func countLines(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
    }
}
