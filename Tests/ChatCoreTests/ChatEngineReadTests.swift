import Testing
@testable import ChatCore

/// Requests that change nothing, answered by the engine from the directory.
@Suite("ChatEngine reads")
struct ChatEngineReadTests {
    static func engine() -> ChatEngine {
        var directory = ChatDirectory()
        for user in ["alice", "bob", "carol"] { directory.upsert(User(id: user, name: user.uppercased(), createdAt: 1)) }
        directory.blocks.block("alice", "bob")
        directory.blocks.block("carol", "alice")
        return ChatEngine(directory: directory, cursors: CursorSealer(secret: "test-secret-of-thirty-two-bytes!"))
    }

    @Test("me lists whom the caller blocked; user.get shows blockedByMe and hides who blocked the caller")
    func meAndUser() throws {
        let engine = Self.engine()
        let me = try #require(parseJSON(try engine.me("alice")))
        #expect(me["blockedUserIds"]?.arrayValue?.compactMap(\.stringValue) == ["bob"])
        let bob = try #require(parseJSON(try engine.user("bob", seenBy: "alice")))
        #expect(bob["blockedByMe"]?.boolValue == true)
        let carol = try #require(parseJSON(try engine.user("carol", seenBy: "alice")))
        #expect(carol["hasBlockedMe"] == nil, "revealed a block with revealBlockedBy off")
        #expect(errorCode { try engine.user("nobody", seenBy: "alice") } == .userNotFound)
    }

    @Test("user.blocked.list: byMe for clients, every direction for the backend, cursors sealed per list")
    func blockedList() throws {
        let engine = Self.engine()
        let mine = try #require(parseJSON(try engine.blockedUsers(of: "alice", direction: .byMe, limit: 20, search: nil,
                                                                  userIDs: nil, cursor: nil)))
        #expect(mine["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["bob"])
        #expect(errorCode { try engine.blockedUsers(of: "alice", direction: .me, limit: 20, search: nil, userIDs: nil, cursor: nil) }
                == .forbidden)
        let both = try #require(parseJSON(try engine.blockedUsers(of: "alice", direction: .both, limit: 1, search: nil, userIDs: nil,
                                                                  cursor: nil, revealed: true)))
        let next = try #require(both["next"]?.stringValue)
        let rest = try #require(parseJSON(try engine.blockedUsers(of: "alice", direction: .both, limit: 1, search: nil, userIDs: nil,
                                                                  cursor: next, revealed: true)))
        #expect(rest["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["carol"])
        #expect(errorCode { try engine.listUsers(ids: nil, metadataKey: nil, metadataValues: nil, limit: 5, cursor: next,
                                                 seenBy: "alice") } == .invalidCursor)
        #expect(errorCode { try engine.listChannels(of: "alice", limit: 5, cursor: "forged") } == .invalidCursor)
    }
}
