import Testing
@testable import ChatCore

/// PROTOCOL.md §14 presence in the engine, without sockets: subscriptions per connection,
/// events only on real changes and only to the connections that follow the user, the cap,
/// and strict mode's blocked pairs.
@Suite("ChatEngine presence")
struct ChatEnginePresenceTests {
    private static func sessions(_ effects: [EngineEffect]) -> [SessionID] {
        effects.flatMap { effect -> [SessionID] in
            if case .publishToSessions(let sessions, _) = effect { return sessions }
            return []
        }
    }

    @Test func changesGoToTheFollowingConnectionsOnlyAndOnlyWhenTheStateChanges() throws {
        var engine = makeEngine(users: ["alice", "bob", "carol"])
        _ = try engine.presenceSubscribe(session: 1, user: "bob", to: ["alice"])
        _ = try engine.presenceSubscribe(session: 2, user: "carol", to: ["alice", "bob"])
        #expect(Self.sessions(engine.presenceChanged("alice", online: true, at: 10)) == [1, 2])
        #expect(engine.presenceChanged("alice", online: true, at: 11).isEmpty, "already online")
        #expect(Self.sessions(engine.presenceChanged("bob", online: true, at: 12)) == [2])
        engine.presenceUnsubscribe(session: 2, from: ["alice"])
        #expect(Self.sessions(engine.presenceChanged("alice", online: false, at: 13)) == [1])
        engine.presenceSessionClosed(1)
        #expect(engine.presenceChanged("alice", online: true, at: 14).isEmpty)
        #expect(engine.directory.users["alice"]?.lastSeenAt == 14)
    }

    @Test func theAnswerIsTheCurrentStateInTheOrderAsked() throws {
        var engine = makeEngine(users: ["alice", "bob", "carol"])
        _ = engine.presenceChanged("carol", online: true, at: 5)
        let json = String(decoding: try engine.presenceSubscribe(session: 1, user: "bob", to: ["carol", "alice", "carol"]),
                          as: UTF8.self)
        #expect(json == #"{"users":[{"userId":"carol","online":true,"lastSeenAt":5},{"userId":"alice","online":false,"lastSeenAt":0}]}"#)
    }

    @Test func unknownUsersAndTheCapAreRefusedWithoutAddingAnything() throws {
        var engine = makeEngine(users: ["bob"] + (0...1_000).map { "u\($0)" })
        #expect(throws: ChatError.self) { try engine.presenceSubscribe(session: 1, user: "bob", to: ["u1", "ghost"]) }
        _ = engine.presenceChanged("u1", online: true, at: 1)
        #expect(engine.presenceChanged("u1", online: false, at: 2).isEmpty, "the refused subscribe added nothing")
        _ = try engine.presenceSubscribe(session: 1, user: "bob", to: (0..<1_000).map { "u\($0)" })
        do {
            _ = try engine.presenceSubscribe(session: 1, user: "bob", to: ["u1000"])
            Issue.record("the 1,001st subscription was taken")
        } catch {
            #expect(error.code == .badRequest)
        }
        #expect(engine.presenceChanged("u1000", online: true, at: 3).isEmpty)
    }

    @Test(arguments: [DeliveryPolicy.Mode.standard, .strict])
    func strictModeHidesABlockedPairFromEachOther(mode: DeliveryPolicy.Mode) throws {
        var directory = ChatDirectory()
        for user in ["alice", "bob"] { directory.upsert(User(id: user, createdAt: 1)) }
        var settings = ChatEngine.Settings()
        settings.blockingMode = mode
        var engine = ChatEngine(directory: directory, settings: settings)
        engine.directory.blocks.block("alice", "bob")
        _ = engine.presenceChanged("alice", online: true, at: 3)
        let json = String(decoding: try engine.presenceSubscribe(session: 7, user: "bob", to: ["alice"]), as: UTF8.self)
        #expect(json.contains(#""online":\#(mode == .standard)"#))
        #expect(Self.sessions(engine.presenceChanged("alice", online: false, at: 4)) == (mode == .standard ? [7] : []))
    }
}
