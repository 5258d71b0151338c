/// Appends JSON to a byte buffer: the one encoder for replies and events, so a
/// `message.new` is written once and its bytes shared by every recipient.
public struct JSONWriter {
    public var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() {
        punctuate(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        punctuate(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":`; the value follows. Keys are the encoder's own names: no escapes.
    public mutating func key(_ key: StaticString) {
        let count = key.utf8CodeUnitCount
        let comma = needsComma
        append(atMost: count + 4) { out in
            var at = 0
            if comma { out[0] = UInt8(ascii: ","); at = 1 }
            out[at] = UInt8(ascii: "\"")
            (out + at + 1).update(from: key.utf8Start, count: count)
            out[at + 1 + count] = UInt8(ascii: "\"")
            out[at + 2 + count] = UInt8(ascii: ":")
            return at + 3 + count
        }
        needsComma = false
    }

    public mutating func key(_ key: String) {
        string(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) {
        separate()
        Self.appendQuoted(value, to: &bytes)
        needsComma = true
    }

    public mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    public mutating func int(_ value: Int64) {
        let comma = needsComma
        // A comma, a sign and 19 digits at most.
        append(atMost: 21) { out in
            var at = 0
            if comma { out[0] = UInt8(ascii: ","); at = 1 }
            if value < 0 { out[at] = UInt8(ascii: "-"); at += 1 }
            var digits = 1
            var rest = value.magnitude / 10
            while rest > 0 { digits += 1; rest /= 10 }
            var magnitude = value.magnitude
            for index in stride(from: at + digits - 1, through: at, by: -1) {
                out[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            }
            return at + digits
        }
        needsComma = true
    }

    public mutating func int(_ value: Int) { int(Int64(value)) }

    public mutating func bool(_ value: Bool) {
        separate()
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        }
        needsComma = true
    }

    /// An object of `entries` in key order (a stable encoding), each value written by `value`.
    public mutating func object<Value>(sortedBy entries: [String: Value], value: (Value, inout JSONWriter) -> Void) {
        beginObject()
        for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
            self.key(key)
            value(entry, &self)
        }
        endObject()
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    /// Writes already-encoded JSON text (a stored `data` object, a request `id`).
    public mutating func raw(_ json: String) {
        separate()
        bytes.append(contentsOf: json.utf8)
        needsComma = true
    }

    /// Writes an already-encoded JSON value (a result the engine encoded once).
    public mutating func raw(bytes json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let lexeme): raw(lexeme)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for (k, v) in object.entries {
                key(k)
                self.value(v)
            }
            endObject()
        }
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    /// A comma when one is due, then `byte`.
    private mutating func punctuate(_ byte: UInt8) {
        if needsComma {
            append(atMost: 2) { out in
                out[0] = UInt8(ascii: ",")
                out[1] = byte
                return 2
            }
        } else {
            bytes.append(byte)
        }
    }

    /// Appends what `body` writes to the front of `maxCount` bytes and reports the count of:
    /// one capacity check for a whole token instead of one per byte.
    @inline(__always)
    private mutating func append(atMost maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        Self.append(atMost: maxCount, to: &bytes, body)
    }

    @inline(__always)
    private static func append(atMost maxCount: Int, to bytes: inout [UInt8],
                               _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        bytes.append(addingCapacity: maxCount) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                initialized += body(buffer.baseAddress! + initialized)
            }
        }
    }

    static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            appendQuoted(UnsafeRawBufferPointer(utf8), to: &bytes)
        }
        if done == nil {
            var value = value
            value.withUTF8 { appendQuoted(UnsafeRawBufferPointer($0), to: &bytes) }
        }
    }

    /// `"utf8"` with JSON's escapes. Text that needs none (nearly every string) is copied
    /// whole after a scan of eight bytes at a time.
    static func appendQuoted(_ utf8: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        let count = utf8.count
        let firstEscape = firstIndexNeedingEscape(utf8)
        guard firstEscape < count else {
            append(atMost: count + 2, to: &bytes) { out in
                out[0] = UInt8(ascii: "\"")
                if let source = utf8.baseAddress { (out + 1).update(from: source.assumingMemoryBound(to: UInt8.self), count: count) }
                out[count + 1] = UInt8(ascii: "\"")
                return count + 2
            }
            return
        }
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in firstEscape..<count {
            let byte = utf8[index]
            guard Self.needsEscape(byte) else { continue }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[runStart..<index]))
            appendEscaped(byte, to: &bytes)
            runStart = index + 1
        }
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[runStart...]))
        bytes.append(UInt8(ascii: "\""))
    }

    /// The index of the first byte JSON must escape (a control character, `"` or `\`), or
    /// `utf8.count`.
    private static func firstIndexNeedingEscape(_ utf8: UnsafeRawBufferPointer) -> Int {
        let count = utf8.count
        var index = 0
        if let base = utf8.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // A byte below 0x20, or equal to `"` or `\`, sets its high bit in one of these.
                let control = (word &- ones &* 0x20) & ~word
                let quote = ((word ^ (ones &* 0x22)) &- ones) & ~(word ^ (ones &* 0x22))
                let backslash = ((word ^ (ones &* 0x5C)) &- ones) & ~(word ^ (ones &* 0x5C))
                if (control | quote | backslash) & highs != 0 { break }
                index += 8
            }
        }
        while index < count {
            let byte = utf8[index]
            if needsEscape(byte) { return index }
            index += 1
        }
        return count
    }

    /// A control character, `"` or `\\`: what JSON strings must escape.
    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static func appendEscaped(_ byte: UInt8, to bytes: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(0x5C); bytes.append(0x22)
        case UInt8(ascii: "\\"): bytes.append(0x5C); bytes.append(0x5C)
        case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            bytes.append(hex.utf8Start[Int(byte >> 4)])
            bytes.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }
}

extension JSONValue {
    /// Compact JSON text of the value.
    public var jsonText: String {
        var writer = JSONWriter()
        writer.value(self)
        return writer.text
    }
}
