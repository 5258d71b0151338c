import Foundation
import Testing
@testable import ChatClient

/// The §15 fields of `Message` and `Channel` as they come over the wire (and as a gateway
/// before v1.2 leaves them out), and folding a live reaction into a message.
@Suite("Message lifecycle model")
struct MessageLifecycleModelTests {
    private static func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(json.utf8))
    }

    @Test func aV12MessageDecodesEveryLifecycleField() throws {
        let message = try Self.decode(Message.self, """
            {"id":"m","channelId":"c","seq":7,"senderId":"bob","text":"hi @alice","data":null,"clientMessageId":null,
             "createdAt":1,"parentSeq":3,"replyCount":0,"mentionedUserIds":["alice"],"reactions":{"👍":2,"🎉":1},
             "ownReactions":["👍"],"editedAt":5,"deletedAt":null,"version":12}
            """)
        #expect(message.parentSeq == 3 && message.isReply)
        #expect(message.mentionedUserIds == ["alice"])
        #expect(message.reactions == ["👍": 2, "🎉": 1] && message.ownReactions == ["👍"])
        #expect(message.editedAt == 5 && message.isEdited && !message.isDeleted)
        #expect(message.version == 12)
    }

    @Test func aMessageAndAChannelOfAGatewayBeforeV12DecodeWithTheDefaults() throws {
        let message = try Self.decode(Message.self, """
            {"id":"m","channelId":"c","seq":1,"senderId":"bob","text":"hi","data":{"k":1},"clientMessageId":"x","createdAt":1}
            """)
        #expect(message.parentSeq == nil && message.replyCount == 0 && message.mentionedUserIds.isEmpty)
        #expect(message.reactions.isEmpty && message.ownReactions.isEmpty && message.version == 0)
        #expect(message.data == .object(["k": .number(1)]))
        let channel = try Self.decode(Channel.self, """
            {"id":"c","type":"group","name":"","members":["a"],"memberCount":1,"distinct":false,"isOneToOne":false,
             "pushFromBlockedUsers":false,"createdAt":1,"lastMessage":null,"lastActivityAt":1,"lastReadSeq":0,"unreadCount":0}
            """)
        #expect(channel.version == 0 && channel.lastMessage == nil)
    }

    @Test func aLiveReactionFoldsItsCountsAndOnlyTheOwnUsersKinds() {
        var message = Message(id: "m", channelId: "c", seq: 4, senderId: "bob", text: "t", data: nil, clientMessageId: nil,
                              createdAt: 1, reactions: ["👍": 1], version: 3)
        let mine = ReactionUpdate(channelId: "c", seq: 4, userId: "alice", kind: "🎉", reactions: ["👍": 1, "🎉": 1], added: true)
        message = message.applying(mine, ownUserID: "alice")
        #expect(message.reactions == ["👍": 1, "🎉": 1] && message.ownReactions == ["🎉"])
        let theirs = ReactionUpdate(channelId: "c", seq: 4, userId: "bob", kind: "👍", reactions: ["👍": 0, "🎉": 1], added: false)
        message = message.applying(theirs, ownUserID: "alice")
        #expect(message.reactions == ["🎉": 1], "a kind counted 0 is gone")
        #expect(message.ownReactions == ["🎉"], "another user's removal is not mine")
        let removed = ReactionUpdate(channelId: "c", seq: 4, userId: "alice", kind: "🎉", reactions: [:], added: false)
        #expect(message.applying(removed, ownUserID: "alice").ownReactions.isEmpty)
        // Another message's event, or any event on a tombstone, changes nothing.
        let elsewhere = ReactionUpdate(channelId: "c", seq: 5, userId: "alice", kind: "👀", reactions: ["👀": 1], added: true)
        #expect(message.applying(elsewhere, ownUserID: "alice") == message)
        var tombstone = message
        tombstone.deletedAt = 9
        tombstone.reactions = [:]
        #expect(tombstone.applying(mine, ownUserID: "alice") == tombstone)
    }
}
