import Testing
@testable import ChatClient

/// Typing through the SDK (PROTOCOL.md §14): each typist's events in small channels, one
/// `typing.users` list in channels above `limits.typingListAboveMembers`.
@Suite("ChatClient typing")
struct ChatClientTypingTests {
    @Test func smallChannelsTellEachTypistAndLargeOnesTheList() async throws {
        let gateway = try await LiveGateway.start(typingListAboveMembers: 2)
        let alice = gateway.client("alice")
        let bob = gateway.client("bob")
        let carol = gateway.client("carol")
        for client in [alice, bob, carol] { try await client.connect() }
        let pair = try await alice.createChannel(userIDs: ["bob"], name: "two")
        let room = try await alice.createChannel(userIDs: ["bob", "carol"], name: "three")
        let inPair = StreamReader(await alice.events(in: pair.id))
        let inRoom = StreamReader(await alice.events(in: room.id))

        try await bob.startTyping(in: pair.id)
        let typing = await inPair.first { if case .typing(let channel, let user, let started) = $0 { (channel, user, started) } else { nil } }
        #expect(typing?.0 == pair.id && typing?.1 == "bob" && typing?.2 == true, "two members: bob's own typing.start")

        try await bob.startTyping(in: room.id)
        let list = await inRoom.first { if case .typingUsers(let channel, let users, let count) = $0 { (channel, users, count) } else { nil } }
        #expect(list?.0 == room.id && list?.1 == ["bob"] && list?.2 == 1, "three members: the room's list")
        #expect(ChatEvent.typingUsers(channelId: room.id, userIds: [], count: 0).channelId == room.id)
    }
}
