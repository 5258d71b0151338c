/// A 4-byte masking key (RFC 6455 §5.3), stored in wire order.
public struct MaskKey: Equatable, Sendable {
    public var bytes: (UInt8, UInt8, UInt8, UInt8)

    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        bytes = (b0, b1, b2, b3)
    }

    public static func random() -> MaskKey {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt32
        return MaskKey(UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
                       UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 24))
    }

    public static func == (lhs: MaskKey, rhs: MaskKey) -> Bool {
        lhs.bytes.0 == rhs.bytes.0 && lhs.bytes.1 == rhs.bytes.1
            && lhs.bytes.2 == rhs.bytes.2 && lhs.bytes.3 == rhs.bytes.3
    }

    /// The key as a little-endian word rotated so that byte `offset % 4` comes first.
    @inline(__always)
    func word(startingAt offset: Int) -> UInt64 {
        let k = (UInt32(bytes.0) | UInt32(bytes.1) << 8 | UInt32(bytes.2) << 16 | UInt32(bytes.3) << 24)
        let shift = UInt32((offset & 3) * 8)
        let rotated = shift == 0 ? k : (k >> shift) | (k << (32 - shift))
        return UInt64(rotated) | UInt64(rotated) << 32
    }

    /// XORs `source` with the key (the key's byte `offset % 4` applies to the first
    /// byte) and appends the result to `destination`. Masking and unmasking are the same.
    public func apply(_ source: UnsafeRawBufferPointer, offset: Int, appendingTo destination: inout [UInt8]) {
        let count = source.count
        guard count > 0, let src = source.baseAddress else { return }
        let start = destination.count
        destination.append(contentsOf: repeatElement(0, count: count))
        destination.withUnsafeMutableBytes { buffer in
            guard let dst = buffer.baseAddress?.advanced(by: start) else { return }
            Self.xor(src, dst, count: count, key: word(startingAt: offset))
        }
    }

    /// XORs `count` bytes from `source` with the key into `destination` (the key's first
    /// byte applies to the first byte).
    public func apply(from source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int) {
        guard count > 0 else { return }
        Self.xor(source, destination, count: count, key: word(startingAt: 0))
    }

    /// XORs `count` bytes of `buffer` with the key in place.
    public func apply(inPlace buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        Self.xor(UnsafeRawPointer(base), base, count: buffer.count, key: word(startingAt: offset))
    }

    @inline(__always)
    private static func xor(_ src: UnsafeRawPointer, _ dst: UnsafeMutableRawPointer, count: Int, key: UInt64) {
        var i = 0
        while i + 8 <= count {
            let v = src.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            dst.storeBytes(of: v ^ key, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        var k = key
        while i < count {
            let v = src.load(fromByteOffset: i, as: UInt8.self)
            dst.storeBytes(of: v ^ UInt8(truncatingIfNeeded: k), toByteOffset: i, as: UInt8.self)
            k >>= 8
            i += 1
        }
    }
}
