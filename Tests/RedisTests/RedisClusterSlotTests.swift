import Testing
@testable import Redis

/// Key → hash slot as the Redis Cluster specification defines it: CRC16 (XMODEM) of the
/// key, or of its hash tag, mod 16384.
@Suite struct RedisClusterSlotTests {
    @Test func crc16IsTheSpecsXMODEM() {
        #expect(RedisClusterSlot.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(RedisClusterSlot.crc16([UInt8]()) == 0)
    }

    /// Slots redis-server itself gives (`CLUSTER KEYSLOT`).
    @Test func slotsAreTheServers() {
        #expect(RedisClusterSlot.slot(forKey: "foo") == 12182)
        #expect(RedisClusterSlot.slot(forKey: "bar") == 5061)
        #expect(RedisClusterSlot.slot(forKey: "") == 0)
        #expect(RedisClusterSlot.slot(forKey: "123456789") == 0x31C3 % 16384)
    }

    @Test func hashTagsFollowTheSpec() {
        func hashed(_ key: String) -> String {
            String(decoding: RedisClusterSlot.hashedPart(of: Array(key.utf8)), as: UTF8.self)
        }
        #expect(RedisClusterSlot.slot(forKey: "{user1000}.following") == RedisClusterSlot.slot(forKey: "{user1000}.followers"))
        #expect(RedisClusterSlot.slot(forKey: "{user1000}.following") == RedisClusterSlot.slot(forKey: "user1000"))
        #expect(hashed("foo{}{bar}") == "foo{}{bar}")
        #expect(hashed("foo{{bar}}zap") == "{bar")
        #expect(hashed("foo{bar}{zap}") == "bar")
        #expect(hashed("{}") == "{}")
        #expect(hashed("no{tag") == "no{tag")
        #expect(hashed("close}{first") == "close}{first")
        #expect(hashed("a{b}") == "b")
    }

    @Test func everySlotIsInRangeAndChannelsHashAsKeys() {
        var seen = Set<Int>()
        for n in 0..<20_000 {
            let slot = RedisClusterSlot.slot(forKey: "key:\(n)")
            #expect((0..<16_384).contains(slot))
            seen.insert(slot)
        }
        #expect(seen.count > 11_000)
        #expect(RedisClusterSlot.slot(forChannel: "chat:{room}") == RedisClusterSlot.slot(forKey: "room"))
        let binary: [UInt8] = [0xFF, 0x00, UInt8(ascii: "{"), 0x80, UInt8(ascii: "}")]
        #expect(RedisClusterSlot.slot(forKey: binary) == RedisClusterSlot.slot(forKey: [0x80]))
    }
}
