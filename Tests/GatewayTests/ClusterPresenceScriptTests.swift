import Foundation
import ServiceTestSupport
import Testing
@testable import Gateway

/// The presence scripts against a real Redis, in the orders two nodes can produce: a
/// user's first-or-last change is decided in the user's slot with a version and applied
/// on the presence set only when newer, and the expiry of a dead node's users respects a
/// change applied meanwhile (docs/ARCHITECTURE.md, "On a sharded Redis").
@Suite(.enabled(if: RedisTestServer.isAvailable, "needs redis-server"), .serialized)
struct ClusterPresenceScriptTests {
    private let redis: RedisTestServer

    init() throws {
        redis = try RedisTestServer()
        try redis.start()
    }

    private func cli(_ arguments: [String]) throws -> String {
        try ChildProcess.run("/usr/bin/redis-cli", ["-h", "127.0.0.1", "-p", "\(redis.port)"] + arguments, timeoutSeconds: 10)
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func announce(online: Bool, _ user: String, version: Int64, at now: Int64 = 1_000) throws -> String {
        try cli(["EVAL", ClusterPresence.announceScript, "3", ClusterPresence.onlineKey, ClusterPresence.versionsKey,
                 ClusterPresence.goneKey, online ? "1" : "0", user, "\(version)", "\(now + 15_000)", "\(now)", ""])
    }

    private func isOnline(_ user: String) throws -> Bool {
        try !cli(["ZSCORE", ClusterPresence.onlineKey, user]).isEmpty
    }

    @Test func aChangeOlderThanTheLastAppliedIsIgnoredInEitherOrder() throws {
        // Node 2's admission (version 200) reached the presence set before node 1's release (100).
        #expect(try announce(online: true, "alice", version: 200) == "1")
        #expect(try announce(online: false, "alice", version: 100) == "0")
        #expect(try isOnline("alice"), "the later change holds")
        // And the other way: a release (300), then an admission decided before it (250).
        #expect(try announce(online: false, "alice", version: 300) == "1")
        #expect(try announce(online: true, "alice", version: 250) == "0")
        #expect(try !isOnline("alice"))
    }

    @Test func theUsersSlotGivesVersionsThatOnlyGrowAndSaysFirstAndLast() throws {
        let (key, versionKey) = (ClusterConnections.key("bob"), ClusterConnections.versionKey("bob"))
        func admit(_ entry: String) throws -> [Int64] {
            try cli(["EVAL", ClusterConnections.admitScript, "2", key, versionKey, "1000", "5", "60000", entry, "30000"])
                .split(separator: "\n").compactMap { Int64($0) }
        }
        func release(_ entry: String) throws -> [Int64] {
            try cli(["EVAL", ClusterConnections.releaseScript, "2", key, versionKey, entry, "1000", "30000"])
                .split(separator: "\n").compactMap { Int64($0) }
        }
        let first = try admit("n1:1"), second = try admit("n2:1")
        let leaving = try release("n1:1"), last = try release("n2:1"), again = try release("n2:1")
        #expect(first.prefix(2) == [1, 1] && second.prefix(2) == [1, 0], "\(first) \(second)")
        #expect(leaving.prefix(2) == [1, 0] && last.prefix(2) == [1, 1], "\(leaving) \(last)")
        #expect(again == [0, 0, 0], "an entry released twice changes nothing")
        let versions = [first, second, leaving, last].map { $0.last ?? 0 }
        #expect(versions == versions.sorted() && Set(versions).count == 4, "\(versions)")
        #expect(ClusterConnections.key("bob").contains("{bob}") && versionKey.hasPrefix(key))
    }

    @Test func aDeadNodesUserExpiresUnlessANewerChangeWasApplied() throws {
        func expire(_ user: String, newest: Int64, version: Int64, now: Int64) throws -> String {
            try cli(["EVAL", ClusterPresence.expireScript, "3", ClusterPresence.onlineKey, ClusterPresence.versionsKey,
                     ClusterPresence.goneKey, "\(now)", user, "\(newest)", "\(version)", ""])
        }
        _ = try announce(online: true, "carol", version: 500, at: 1_000)  // expires at 16,000
        #expect(try expire("carol", newest: 0, version: 400, now: 20_000) == "0", "a newer change was applied since the read")
        #expect(try isOnline("carol"))
        #expect(try expire("carol", newest: 0, version: 0, now: 20_000) == "1", "no version left in her slot: nothing newer can come")
        #expect(try !isOnline("carol"))
        // A user with a live entry elsewhere keeps it as her expiry.
        _ = try announce(online: true, "dave", version: 700, at: 1_000)
        #expect(try expire("dave", newest: 40_000, version: 700, now: 20_000) == "1")
        #expect(try cli(["ZSCORE", ClusterPresence.onlineKey, "dave"]) == "40000")
        // Versions of users gone for a minute are dropped.
        #expect(try !cli(["HGET", ClusterPresence.versionsKey, "carol"]).isEmpty)
        _ = try expire("nobody", newest: 0, version: 0, now: 20_000 + ClusterPresence.goneMilliseconds + 1)
        #expect(try cli(["HGET", ClusterPresence.versionsKey, "carol"]).isEmpty)
    }
}
