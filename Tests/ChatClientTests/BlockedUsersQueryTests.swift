import Foundation
import Testing
@testable import ChatClient

/// The blocking API in the shape app developers know: `block` with a result per id, and a
/// `BlockedUsersQuery` paging through 250 blocked users with search and every direction.
@Suite("Blocked users query", .serialized)
struct BlockedUsersQueryTests {
    private static func all(_ query: BlockedUsersQuery) async throws -> (ids: [String], pages: [Int]) {
        var ids: [String] = []
        var pages: [Int] = []
        while let page = try await query.next() {
            ids += page.map(\.id)
            pages.append(page.count)
        }
        return (ids, pages)
    }

    @Test func pagesThroughTwoHundredFiftyBlockedUsersWithSearchAndBothDirections() async throws {
        let gateway = try await LiveGateway.start(revealBlockedBy: true)
        let users = (0..<250).map { String(format: "u%03d", $0) }
        for id in users + ["x0", "x1", "x2", "x3", "x4"] {
            let (status, _) = try await gateway.admin("POST", "/v1/admin/users", ["id": id, "name": "Name \(id)"])
            #expect(status == 200)
        }
        let alice = gateway.client("alice")
        try await alice.connect()
        for start in stride(from: 0, to: 250, by: 100) {
            let results = try await alice.block(Array(users[start..<min(start + 100, 250)]))
            #expect(results.count == min(100, 250 - start))
            #expect(results.values.allSatisfy { $0 == .success })
        }
        let odd = try await alice.block(["alice", "nobody", "u000"])
        #expect(odd == ["alice": .failed(.cannotBlockSelf), "nobody": .failed(.uidNotFound), "u000": .success])
        // Some of them, and five others, blocked alice.
        for id in users.prefix(20) + ["x0", "x1", "x2", "x3", "x4"] {
            let (status, _) = try await gateway.admin("POST", "/v1/admin/users/\(id)/blocks", ["userIds": ["alice"]])
            #expect(status == 200)
        }

        let byMe = try await Self.all(alice.blockedUsersQuery(direction: .blockedByMe, limit: 100))
        #expect(byMe.ids == users)
        #expect(byMe.pages == [100, 100, 50])
        let searched = try await Self.all(alice.blockedUsersQuery(direction: .blockedByMe, limit: 30, search: "U1"))
        #expect(searched.ids == Array(users[100..<200]))
        #expect(searched.pages == [30, 30, 30, 10])
        let byName = try await Self.all(alice.blockedUsersQuery(limit: 100, search: "name u24"))
        #expect(byName.ids == Array(users[240..<250]))
        let me = try await Self.all(alice.blockedUsersQuery(direction: .hasBlockedMe, limit: 10))
        #expect(me.ids == Array(users.prefix(20)) + ["x0", "x1", "x2", "x3", "x4"])
        #expect(me.pages == [10, 10, 5])
        let both = try await Self.all(alice.blockedUsersQuery(direction: .both, limit: 100))
        #expect(both.ids == users + ["x0", "x1", "x2", "x3", "x4"])
        let some = try await Self.all(alice.blockedUsersQuery(direction: .both, userIDs: ["u005", "u100", "x3", "bob"]))
        #expect(some.ids == ["u005", "u100", "x3"])

        let flags = try await alice.blockedUsersQuery(direction: .both, userIDs: ["u005", "u100", "x3"]).next() ?? []
        #expect(flags.map { [$0.blockedByMe, $0.hasBlockedMe ?? false] } == [[true, true], [true, false], [false, true]])
        let unblocked = try await alice.unblock(["u000"])
        #expect(unblocked == ["u000": .success])
        #expect(try await Self.all(alice.blockedUsersQuery(limit: 100)).ids.count == 249)
        await alice.disconnect()
    }
}
