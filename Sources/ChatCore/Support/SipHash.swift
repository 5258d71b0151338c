/// SipHash-2-4 (Aumasson & Bernstein): a keyed 64-bit MAC, used to seal cursors
/// so a client cannot forge or edit one.
struct SipHash {
    let k0: UInt64
    let k1: UInt64

    func mac(_ bytes: [UInt8]) -> UInt64 {
        var v0: UInt64 = 0x736f6d6570736575 ^ k0
        var v1: UInt64 = 0x646f72616e646f6d ^ k1
        var v2: UInt64 = 0x6c7967656e657261 ^ k0
        var v3: UInt64 = 0x7465646279746573 ^ k1
        func round() {
            v0 &+= v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
            v2 &+= v3; v3 = rotl(v3, 16); v3 ^= v2
            v0 &+= v3; v3 = rotl(v3, 21); v3 ^= v0
            v2 &+= v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
        }
        let count = bytes.count
        var i = 0
        while i + 8 <= count {
            var m: UInt64 = 0
            for j in 0..<8 { m |= UInt64(bytes[i + j]) << (8 * UInt64(j)) }
            v3 ^= m
            round(); round()
            v0 ^= m
            i += 8
        }
        var last = UInt64(count & 0xFF) << 56
        for j in 0..<(count - i) { last |= UInt64(bytes[i + j]) << (8 * UInt64(j)) }
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xFF
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }

    private func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }
}
