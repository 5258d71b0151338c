/// Where a key lives in a Redis Cluster (sans-IO): its hash slot, CRC16 of the key mod
/// 16384, as the Redis Cluster specification defines it. A key with a hash tag (`{...}`:
/// the first `{`, the first `}` after it, and at least one byte between them) is hashed
/// by the tag alone, so keys that share a tag share a slot and can go in one command.
/// A pub/sub channel of SPUBLISH/SSUBSCRIBE is placed by the same function.
public enum RedisClusterSlot {
    /// Slots in a cluster: 0 through 16383.
    public static let count = 16_384

    /// The slot of `key`.
    public static func slot(forKey key: some Collection<UInt8>) -> Int {
        Int(crc16(hashedPart(of: key)) & 0x3FFF)
    }

    public static func slot(forKey key: String) -> Int {
        slot(forKey: key.utf8)
    }

    /// The slot of a sharded pub/sub channel (SPUBLISH, SSUBSCRIBE): as a key's.
    public static func slot(forChannel channel: String) -> Int {
        slot(forKey: channel.utf8)
    }

    /// The bytes that decide the slot: the hash tag's content when the key has a non-empty
    /// one, else the whole key. `foo{}{bar}` has none (the first `{` is followed at once by
    /// `}`), `foo{{bar}}zap` has `{bar`, `foo{bar}{zap}` has `bar`.
    public static func hashedPart<Key: Collection<UInt8>>(of key: Key) -> Key.SubSequence {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")) else { return key[...] }
        let afterOpen = key.index(after: open)
        guard let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen else {
            return key[...]
        }
        return key[afterOpen..<close]
    }

    /// CRC16-CCITT as XMODEM computes it (polynomial 0x1021, initial value 0, no
    /// reflection, no final XOR): the spec's check value for "123456789" is 0x31C3.
    public static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// The CRC of each byte value as the top byte of the register, computed once.
    private static let table: [UInt16] = (0..<256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
