import Redis
import Testing
@testable import Gateway

/// Redis Cluster placement of the keys a user's requests touch: one script takes a user's
/// rate key and his slow-mode key, so they must share a hash slot; different users must
/// spread over the slots, so that the shared rates spread over the masters.
struct ClusterKeySlotTests {
    @Test func aUsersRateAndSlowModeKeysShareOneSlot() {
        for user in ["alice", "bob", "u-42", "名前", "a}b", "{x}"] {
            let slot = RedisClusterSlot.slot(forKey: SharedRateLimit.key(user))
            #expect(RedisClusterSlot.slot(forKey: SharedRateLimit.key(user, bucket: .changes)) == slot, "\(user)")
            #expect(RedisClusterSlot.slot(forKey: SharedRateLimit.slowModeKey(user, channel: "general")) == slot, "\(user)")
            #expect(RedisClusterSlot.slot(forKey: SharedRateLimit.slowModeKey(user, channel: "other")) == slot, "\(user)")
        }
    }

    @Test func usersSpreadOverTheSlotsOfThreeMasters() {
        // Three masters with equal ranges, as `redis-cli --cluster create` gives them.
        var perMaster = [0, 0, 0]
        for n in 0..<3_000 {
            perMaster[RedisClusterSlot.slot(forKey: SharedRateLimit.key("user-\(n)")) * 3 / 16_384] += 1
        }
        #expect(perMaster.allSatisfy { $0 > 800 }, "\(perMaster)")
    }
}
