import Testing
@testable import ChatCore

/// Live sessions in the engine, without sockets: who may connect, what a session starts
/// with (its channels and the fan-out filter's blocked sets), what closing the last one
/// changes, the cluster's presence snapshot and `session.resync`.
@Suite("ChatEngine sessions")
struct ChatEngineSessionTests {
    private static func opened(_ effects: [EngineEffect]) -> SessionSeed? {
        for case .sessionOpened(_, let seed) in effects { return seed }
        return nil
    }

    private static func refused(_ effects: [EngineEffect]) -> SessionRefusalReason? {
        for case .sessionRefused(_, let reason) in effects { return reason }
        return nil
    }

    private static func presence(_ effects: [EngineEffect]) -> [String] {
        effects.compactMap { effect in
            if case .publishToSessions(_, let payload) = effect { return String(decoding: payload, as: UTF8.self) }
            return nil
        }
    }

    @Test("a session starts with its user's channels and both blocked sets, after its profile write and presence")
    func admittedSessionsCarryTheirSeed() throws {
        var directory = ChatDirectory()
        for user in ["alice", "bob", "carol"] { directory.upsert(User(id: user, createdAt: 1)) }
        directory.install(Channel(id: "c1", type: .group, members: ["alice", "bob"], createdAt: 1, createdBy: "alice"))
        directory.install(Channel(id: "c2", type: .group, members: ["bob", "carol"], createdAt: 1, createdBy: "alice"))
        directory.blocks.block("alice", "carol")
        directory.blocks.block("bob", "alice")
        var engine = ChatEngine(directory: directory)
        _ = try engine.presenceSubscribe(session: 99, user: "bob", to: ["alice"])
        let effects = engine.openSession(SessionRequest(id: 1, user: "alice", name: "Alice"), now: 50)
        let seed = try #require(Self.opened(effects))
        #expect(seed.userNumber == engine.number(for: "alice"))
        #expect(seed.channels == ["c1"])
        #expect(seed.blocked == [engine.number(for: "carol")])
        #expect(seed.blockedBy == [engine.number(for: "bob")])
        #expect(effects.last == .sessionOpened(1, seed), "the verdict comes after what admission caused")
        #expect(effects.persisted.count == 1, "the token's profile and the time are written")
        #expect(engine.directory.users["alice"]?.name == "Alice")
        #expect(engine.directory.users["alice"]?.lastSeenAt == 50)
        #expect(Self.presence(effects) == [#"{"type":"event","event":"user.presence","data":{"userId":"alice","online":true,"lastSeenAt":50}}"#])
        #expect(engine.sessions(of: "alice") == [1])
    }

    @Test("deactivated users and users at the connection cap are refused, and nothing changes")
    func refusals() {
        var engine = ChatEngine(directory: makeEngine(users: ["alice", "zed"]).directory,
                                settings: ChatEngine.Settings(maxConnectionsPerUser: 2))
        _ = engine.settle(engine.changeUser("zed", .deactivate, for: .admin(1), now: 1), .committed(.done))
        #expect(Self.refused(engine.openSession(SessionRequest(id: 1, user: "zed"), now: 2)) == .deactivated)
        #expect(engine.sessions(of: "zed").isEmpty)
        #expect(Self.opened(engine.openSession(SessionRequest(id: 2, user: "alice"), now: 3)) != nil)
        #expect(Self.opened(engine.openSession(SessionRequest(id: 3, user: "alice"), now: 4)) != nil)
        let third = engine.openSession(SessionRequest(id: 4, user: "alice"), now: 5)
        #expect(third == [.sessionRefused(4, .tooManyConnections(live: 2))])
        #expect(engine.sessions(of: "alice") == [2, 3])
        _ = engine.closeSession(2, now: 6)
        #expect(Self.opened(engine.openSession(SessionRequest(id: 5, user: "alice"), now: 7)) != nil, "a freed slot admits again")
    }

    @Test("closing the last session keeps lastSeenAt and announces offline; an earlier one changes nothing")
    func closing() throws {
        var engine = makeEngine(users: ["alice", "bob"])
        _ = try engine.presenceSubscribe(session: 99, user: "bob", to: ["alice"])
        _ = engine.openSession(SessionRequest(id: 1, user: "alice"), now: 10)
        _ = engine.openSession(SessionRequest(id: 2, user: "alice"), now: 11)
        #expect(engine.closeSession(1, now: 20).isEmpty)
        let last = engine.closeSession(2, now: 30)
        #expect(Self.presence(last) == [#"{"type":"event","event":"user.presence","data":{"userId":"alice","online":false,"lastSeenAt":30}}"#])
        #expect(engine.directory.users["alice"]?.lastSeenAt == 30)
        #expect(engine.closeSession(2, now: 40).isEmpty, "a session closes once")
        #expect(engine.closeSession(77, now: 40).isEmpty, "a session never admitted changes nothing")
    }

    @Test("in a cluster the shared connection set announces presence: the engine does not, unless it cannot be asked")
    func clusterPresence() throws {
        var engine = makeEngine(users: ["alice", "bob"])
        _ = try engine.presenceSubscribe(session: 99, user: "bob", to: ["alice"])
        #expect(Self.presence(engine.openSession(SessionRequest(id: 1, user: "alice", presenceOnBus: true), now: 10)).isEmpty)
        #expect(Self.presence(engine.presenceSnapshot(online: ["alice"], at: 11)).count == 1, "the snapshot brings alice online")
        #expect(engine.presenceSnapshot(online: ["alice"], at: 12).isEmpty, "nothing changed")
        #expect(engine.presenceUnconfirmed("alice", at: 13).isEmpty, "alice still has a session here")
        #expect(Self.presence(engine.closeSession(1, now: 14, presenceOnBus: true)).isEmpty)
        #expect(Self.presence(engine.presenceUnconfirmed("alice", at: 15)).count == 1)
        #expect(!engine.directory.isOnline("alice"))
    }

    @Test("session.resync names the affected channels to each user with a live session here, and nobody else")
    func resync() throws {
        var directory = ChatDirectory()
        for user in ["alice", "bob", "carol"] { directory.upsert(User(id: user, createdAt: 1)) }
        directory.install(Channel(id: "c1", type: .group, members: ["alice", "bob", "carol"], createdAt: 1, createdBy: "alice"))
        directory.install(Channel(id: "c2", type: .group, members: ["alice"], createdAt: 1, createdBy: "alice"))
        var engine = ChatEngine(directory: directory)
        _ = engine.openSession(SessionRequest(id: 1, user: "alice"), now: 1)
        _ = engine.openSession(SessionRequest(id: 2, user: "bob"), now: 1)
        let all = engine.resync { _ in true }
        #expect(all.published.map(\.users) == [["alice"], ["bob"]])
        #expect(all.published.first?.text == #"{"type":"event","event":"session.resync","data":{"channelIds":["c1","c2"]}}"#)
        #expect(engine.resync { $0 == "c2" }.published.map(\.users) == [["alice"]])
        #expect(engine.resync { _ in false }.isEmpty)
    }

    @Test("the same seed and the same inputs make the same effects, ids included")
    func replayIsDeterministic() {
        func run(seed: UInt64) -> [EngineEffect] {
            var engine = ChatEngine(directory: makeEngine(users: ["alice", "bob"]).directory, ids: IdentifierGenerator(seed: seed))
            var effects = engine.changeChannel(.create(type: .group, userIDs: ["bob"], name: "g", distinct: false, pushFromBlockedUsers: nil),
                                               by: "alice", for: .admin(1), now: 100)
            effects += engine.settle(effects, .committed(.done))
            return effects
        }
        #expect(run(seed: 42) == run(seed: 42))
        #expect(run(seed: 42) != run(seed: 43))
    }
}
