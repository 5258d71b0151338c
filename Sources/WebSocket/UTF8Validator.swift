/// Incremental UTF-8 validation (RFC 3629) that keeps its state across calls,
/// so a text message split over many frames or reads fails on the first
/// invalid byte rather than at the end of the message.
public struct UTF8Validator: Sendable, Equatable {
    private var pending: UInt8 = 0
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// True when no multi-byte sequence is open.
    public var isAtCharacterBoundary: Bool { pending == 0 }

    /// Validates the next bytes; returns false at the first byte that cannot
    /// continue a valid UTF-8 stream. After a false return the state is unspecified.
    public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return true }
        var index = 0
        while index < count {
            if pending == 0 {
                // ASCII fast path, eight bytes at a time.
                while index + 8 <= count {
                    let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    if word & 0x8080_8080_8080_8080 != 0 { break }
                    index += 8
                }
                guard index < count else { return true }
            }
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            index += 1
            if pending > 0 {
                guard byte >= lower, byte <= upper else { return false }
                pending -= 1
                lower = 0x80
                upper = 0xBF
                continue
            }
            switch byte {
            case 0x00...0x7F:
                continue
            case 0xC2...0xDF:
                pending = 1
            case 0xE0:
                pending = 2; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF:
                pending = 2
            case 0xED:
                pending = 2; upper = 0x9F
            case 0xF0:
                pending = 3; lower = 0x90
            case 0xF1...0xF3:
                pending = 3
            case 0xF4:
                pending = 3; upper = 0x8F
            default:
                return false
            }
        }
        return true
    }

    public mutating func validate(_ bytes: some Sequence<UInt8>) -> Bool {
        if let result = bytes.withContiguousStorageIfAvailable({ validate(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        let array = Array(bytes)
        return array.withUnsafeBytes { validate($0) }
    }

    /// Validates a complete byte sequence in one go.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isAtCharacterBoundary
    }
}
