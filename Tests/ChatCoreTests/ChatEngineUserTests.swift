import Testing
@testable import ChatCore

/// Profile writes through the engine alone: requests change memory on commit, background
/// changes (a connect's token profile, `lastSeenAt`) are written one row write at a time
/// behind them, and failed background writes are written again.
@Suite("ChatEngine users")
struct ChatEngineUserTests {
    static let alice = Requester.session(1, requestID: .number("1"))

    @Test("user.update: written, then applied and answered; a failed write keeps the old profile and the retry writes")
    func updateOnCommit() {
        var engine = makeEngine(users: ["alice"])
        let asked = engine.changeUser("alice", .profile(name: "Alice", image: nil, metadata: ["team": "a"]), for: Self.alice, now: 5)
        #expect(asked.persisted.count == 1)
        #expect(engine.directory.users["alice"]?.name == "", "applied before the write committed")
        let failed = engine.settle(asked, .failed)
        #expect(failed.replies.first?.reply.errorCode == .internalError)
        #expect(engine.directory.users["alice"]?.name == "")
        let retry = engine.changeUser("alice", .profile(name: "Alice", image: nil, metadata: ["team": "a"]), for: Self.alice, now: 6)
        guard case .upsertUser(let row)? = retry.persisted.first?.write else {
            Issue.record("the retry wrote nothing")
            return
        }
        #expect(row.name == "Alice" && row.metadata == ["team": "a"])
        let done = engine.settle(retry, .committed(.done))
        #expect(engine.directory.users["alice"]?.name == "Alice")
        #expect(done.replies.first?.reply.json?["name"]?.stringValue == "Alice")
    }

    @Test("a connect's profile during an update in flight is kept in memory and written after it, with both")
    func backgroundBehindUpdate() {
        var engine = makeEngine(users: ["alice"])
        let update = engine.changeUser("alice", .profile(name: nil, image: "a.png", metadata: nil), for: Self.alice, now: 5)
        var seen = engine.directory.users["alice"] ?? User(id: "alice", createdAt: 1)
        seen.name = "From token"
        seen.lastSeenAt = 7
        let touched = engine.touchUser(seen)
        #expect(touched.isEmpty, "a second row write while one is in flight")
        #expect(engine.directory.users["alice"]?.name == "From token")
        let after = engine.settle(update, .committed(.done))
        guard case .upsertUser(let row)? = after.persisted.first?.write else {
            Issue.record("the background change was not written after the update")
            return
        }
        #expect(row.name == "From token" && row.image == "a.png" && row.lastSeenAt == 7)
        _ = engine.settle(after, .committed(.done))
        #expect(engine.directory.users["alice"] == row)
        #expect(engine.writesInFlight == 0)
    }

    @Test("a failed background write is reported and written again on retry, with the row as it is then")
    func backgroundRetry() {
        var engine = makeEngine(users: [])
        let first = engine.touchUser(User(id: "bob", name: "Bob", createdAt: 1, lastSeenAt: 1))
        #expect(engine.directory.users["bob"]?.name == "Bob", "a connect waits for nobody")
        let failed = engine.settle(first, .failed)
        #expect(failed.contains(.userWritesFailed(1)))
        let again = engine.retryUnsavedUsers()
        #expect(again.persisted.count == 1)
        _ = engine.settle(again, .committed(.done))
        #expect(engine.retryUnsavedUsers().isEmpty)
    }

    @Test("deactivation: on commit the flag is set and the sessions close; a failed write does neither")
    func deactivate() {
        var engine = makeEngine(users: ["alice"])
        _ = engine.settle(engine.openSession(SessionRequest(id: 7, user: "alice"), now: 1), .committed(.done))
        let asked = engine.changeUser("alice", .deactivate, for: .admin(1), now: 1)
        let failed = engine.settle(asked, .failed)
        #expect(engine.directory.users["alice"]?.deactivated == false)
        #expect(!failed.contains(.closeSessions([7], .deactivated)))
        let retry = engine.changeUser("alice", .deactivate, for: .admin(2), now: 2)
        let done = engine.settle(retry, .committed(.done))
        #expect(engine.directory.users["alice"]?.deactivated == true)
        #expect(done.contains(.closeSessions([7], .deactivated)))
        #expect(done.replies.first.map { $0.reply == .result(Array("{}".utf8)) } == true)
    }

    @Test("the admin API's upsert creates a missing user on commit; a client cannot update a user that does not exist")
    func adminCreates() {
        var engine = makeEngine(users: [])
        let asked = engine.changeUser("carol", .profile(name: "Carol", image: nil, metadata: nil), for: .admin(1), now: 3)
        #expect(engine.directory.users["carol"] == nil)
        _ = engine.settle(asked, .committed(.done))
        #expect(engine.directory.users["carol"]?.name == "Carol")
        let missing = engine.changeUser("dave", .profile(name: "D", image: nil, metadata: nil), for: Self.alice, now: 4)
        #expect(missing.replies.first?.reply.errorCode == .userNotFound)
    }
}
