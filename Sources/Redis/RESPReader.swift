/// Reads RESP2 replies out of the bytes a Redis connection receives (sans-IO): feed it
/// what the socket gave, take complete replies out. Everything the server sends is
/// checked as untrusted input: lengths and counts are compared with `Limits` before they
/// size anything, integers are parsed with overflow checks, and a reply that breaks the
/// grammar is an error (the connection is then closed), never a trap.
public struct RESPReader: Sendable {
    public struct Limits: Sendable, Equatable {
        /// One bulk string (a bus payload, a script reply).
        public var maxBulkBytes: Int
        /// Elements of one array (ZRANGE over every online user).
        public var maxArrayElements: Int
        /// Arrays within arrays.
        public var maxDepth: Int
        /// A status, error or length line.
        public var maxLineBytes: Int

        public init(maxBulkBytes: Int = 64 << 20, maxArrayElements: Int = 4 << 20, maxDepth: Int = 8,
                    maxLineBytes: Int = 64 << 10) {
            self.maxBulkBytes = maxBulkBytes
            self.maxArrayElements = maxArrayElements
            self.maxDepth = maxDepth
            self.maxLineBytes = maxLineBytes
        }
    }

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    public let limits: Limits
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already taken by complete replies.
    private var consumed = 0

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete reply, or nil until more bytes come.
    public mutating func next() throws(Failure) -> RedisReply? {
        var position = consumed
        guard let reply = try parse(at: &position, depth: 0) else {
            compact()
            return nil
        }
        consumed = position
        if consumed == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 << 10)
            consumed = 0
        }
        return reply
    }

    private mutating func compact() {
        if consumed > 0 && consumed * 2 >= buffer.count {
            buffer.removeFirst(consumed)
            consumed = 0
        }
    }

    /// One reply starting at `position`; nil when it is not complete yet (`position` then
    /// means nothing).
    private func parse(at position: inout Int, depth: Int) throws(Failure) -> RedisReply? {
        guard position < buffer.count else { return nil }
        let type = buffer[position]
        position += 1
        guard let line = try line(at: &position) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            return .status(String(decoding: buffer[line], as: UTF8.self))
        case UInt8(ascii: "-"):
            return .error(String(decoding: buffer[line], as: UTF8.self))
        case UInt8(ascii: ":"):
            return .integer(try integer(line))
        case UInt8(ascii: "$"):
            let length = try integer(line)
            if length == -1 { return .null }
            guard length >= 0 else { throw Failure(description: "negative bulk length") }
            guard length <= Int64(limits.maxBulkBytes) else { throw Failure(description: "bulk string over the limit") }
            let count = Int(length)
            guard buffer.count - position >= count + 2 else { return nil }
            let end = position + count
            guard buffer[end] == UInt8(ascii: "\r"), buffer[end + 1] == UInt8(ascii: "\n") else {
                throw Failure(description: "bulk string not followed by CRLF")
            }
            let bytes = Array(buffer[position..<end])
            position = end + 2
            return .string(bytes)
        case UInt8(ascii: "*"):
            let length = try integer(line)
            if length == -1 { return .null }
            guard length >= 0 else { throw Failure(description: "negative array length") }
            guard length <= Int64(limits.maxArrayElements) else { throw Failure(description: "array over the limit") }
            guard depth < limits.maxDepth else { throw Failure(description: "arrays nested too deep") }
            var elements: [RedisReply] = []
            // Each element takes at least 3 bytes: reserve no more than the bytes could hold.
            elements.reserveCapacity(min(Int(length), (buffer.count - position) / 3 + 1))
            for _ in 0..<Int(length) {
                guard let element = try parse(at: &position, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        default:
            throw Failure(description: "unknown reply type byte \(type)")
        }
    }

    /// The range of the line starting at `position` (without its CRLF); `position` moves past it.
    private func line(at position: inout Int) throws(Failure) -> Range<Int>? {
        var index = position
        let limit = min(buffer.count, position + limits.maxLineBytes + 2)
        while index + 1 < limit {
            if buffer[index] == UInt8(ascii: "\r") {
                guard buffer[index + 1] == UInt8(ascii: "\n") else { throw Failure(description: "CR without LF") }
                let range = position..<index
                position = index + 2
                return range
            }
            index += 1
        }
        if buffer.count - position > limits.maxLineBytes + 1 { throw Failure(description: "line over the limit") }
        return nil
    }

    /// A decimal Int64 (an optional leading minus, 1 to 19 digits), overflow checked.
    private func integer(_ line: Range<Int>) throws(Failure) -> Int64 {
        var index = line.lowerBound
        var negative = false
        if index < line.upperBound && buffer[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < line.upperBound, line.upperBound - index <= 19 else { throw Failure(description: "bad integer") }
        // Accumulated with the number's sign, so that Int64.min (which a Lua script turns an
        // infinite number into) reads like any other integer.
        var value: Int64 = 0
        while index < line.upperBound {
            let byte = buffer[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw Failure(description: "bad integer") }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflowTimes, !overflowSum else { throw Failure(description: "integer out of range") }
            value = sum
            index += 1
        }
        return value
    }
}
