import Testing
@testable import ChatCore

struct WireEncodingTests {
    private func written(_ body: (inout JSONWriter) -> Void) throws -> JSONValue {
        var w = JSONWriter()
        body(&w)
        return try JSONParser.parse(w.bytes)
    }

    static let user = User(id: "bob", name: "Bob \"B\"", image: "https://x/b.png",
                           metadata: ["team": "red", "a\nb": "é😀", "": ""], createdAt: 1, lastSeenAt: 1_700_000_000_123)

    // MARK: User

    @Test("User: every §3 field; hasBlockedMe only where revealed")
    func userShape() throws {
        let hidden = try written { WireEncoding.write(.init(user: Self.user, online: true, blockedByMe: false, hasBlockedMe: nil), to: &$0) }
        #expect(hidden.keys == ["id", "name", "image", "metadata", "online", "lastSeenAt", "blockedByMe"])
        #expect(hidden["id"] == .string("bob"))
        #expect(hidden["name"] == .string("Bob \"B\""))
        #expect(hidden["image"] == .string("https://x/b.png"))
        #expect(hidden["online"] == .bool(true))
        #expect(hidden["lastSeenAt"] == .number("1700000000123"))
        #expect(hidden["blockedByMe"] == .bool(false))
        #expect(hidden["hasBlockedMe"] == nil)
        let metadata = try #require(hidden["metadata"]?.objectValue)
        #expect(metadata.entries.count == 3)
        #expect(metadata["team"] == .string("red"))
        #expect(metadata["a\nb"] == .string("é😀"))
        #expect(metadata[""] == .string(""))

        for flag in [false, true] {
            let revealed = try written {
                WireEncoding.write(.init(user: Self.user, online: false, blockedByMe: true, hasBlockedMe: flag), to: &$0)
            }
            #expect(revealed.keys == ["id", "name", "image", "metadata", "online", "lastSeenAt", "blockedByMe", "hasBlockedMe"])
            #expect(revealed["hasBlockedMe"] == .bool(flag))
            #expect(revealed["online"] == .bool(false))
            #expect(revealed["blockedByMe"] == .bool(true))
        }
    }

    @Test("User: empty metadata is an empty object")
    func userEmptyMetadata() throws {
        let user = User(id: "a", createdAt: 0)
        let value = try written { WireEncoding.write(.init(user: user, online: false, blockedByMe: false, hasBlockedMe: nil), to: &$0) }
        #expect(value["metadata"] == .object(JSONObject()))
        #expect(value["name"] == .string(""))
        #expect(value["image"] == .string(""))
        #expect(value["lastSeenAt"] == .number("0"))
    }

    // MARK: Message

    static let message = Message(id: "m_1", channelID: "c_42", seq: 7, senderID: "bob", text: "hi \"there\"\n\u{1}",
                                 dataJSON: #"{"z":1.50,"a":[true,null]}"#, clientMessageID: "cm-1",
                                 createdAt: 1_700_000_000_000, hiddenFrom: "alice")

    @Test("Message: §3 fields, data written raw, hiddenFrom never on the wire")
    func messageShape() throws {
        let value = try written { WireEncoding.write(Self.message, to: &$0) }
        #expect(value.keys == ["id", "channelId", "seq", "senderId", "text", "data", "clientMessageId", "createdAt", "parentSeq", "replyCount", "mentionedUserIds", "reactions", "ownReactions", "editedAt", "deletedAt", "version"])
        #expect(value["id"] == .string("m_1"))
        #expect(value["channelId"] == .string("c_42"))
        #expect(value["seq"] == .number("7"))
        #expect(value["senderId"] == .string("bob"))
        #expect(value["text"] == .string("hi \"there\"\n\u{1}"))
        #expect(value["data"] == (try JSONParser.parse(#"{"z":1.50,"a":[true,null]}"#)))
        #expect(value["data"]?.keys == ["z", "a"])
        #expect(value["clientMessageId"] == .string("cm-1"))
        #expect(value["createdAt"] == .number("1700000000000"))
        var w = JSONWriter()
        WireEncoding.write(Self.message, to: &w)
        #expect(w.text.contains(#""data":{"z":1.50,"a":[true,null]}"#))
        #expect(!w.text.contains("alice"))
    }

    @Test("Message: no data and no clientMessageId are null")
    func messageNulls() throws {
        let plain = Message(id: "m", channelID: "c", seq: 1, senderID: "a", text: "t", createdAt: 5)
        let value = try written { WireEncoding.write(plain, to: &$0) }
        #expect(value.keys == ["id", "channelId", "seq", "senderId", "text", "data", "clientMessageId", "createdAt", "parentSeq", "replyCount", "mentionedUserIds", "reactions", "ownReactions", "editedAt", "deletedAt", "version"])
        #expect(value["data"] == .null)
        #expect(value["clientMessageId"] == .null)
        // §15: a message of the channel itself, never edited or deleted, without reactions or replies.
        #expect(value["parentSeq"] == .null)
        #expect(value["replyCount"] == .number("0"))
        #expect(value["mentionedUserIds"] == .array([]))
        #expect(value["reactions"]?.keys == [])
        #expect(value["ownReactions"] == .array([]))
        #expect(value["editedAt"] == .null)
        #expect(value["deletedAt"] == .null)
        #expect(value["version"] == .number("0"))
    }

    @Test("Message: §15 fields as given, reaction kinds sorted")
    func messageLifecycleFields() throws {
        let changed = Message(id: "m", channelID: "c", seq: 4, senderID: "a", text: "t", createdAt: 5, parentSeq: 2,
                              mentionedUserIDs: ["b", "c"], editedAt: 9, deletedAt: nil, version: 12,
                              reactions: ["😀": 2, "+1": 1], replyCount: 0)
        var w = JSONWriter()
        WireEncoding.write(changed, ownReactions: ["+1"], to: &w)
        #expect(w.text.contains(#""parentSeq":2,"replyCount":0,"mentionedUserIds":["b","c"],"reactions":{"+1":1,"😀":2},"ownReactions":["+1"],"editedAt":9,"deletedAt":null,"version":12"#))
    }

    // MARK: Channel

    @Test("Channel: §3 fields with lastMessage null and lastActivityAt as given")
    func channelShape() throws {
        let channel = Channel(id: "c_42", type: .group, name: "Team", members: ["alice", "bob"], distinct: true,
                              isOneToOne: true, pushFromBlockedUsers: true, createdAt: 100, createdBy: "alice")
        let value = try written {
            WireEncoding.write(channel, lastMessage: nil, lastActivityAt: 100, lastReadSeq: 3, unreadCount: 2, to: &$0)
        }
        #expect(value.keys == ["id", "type", "name", "members", "memberCount", "distinct", "isOneToOne", "pushFromBlockedUsers",
                               "createdAt", "lastMessage", "lastActivityAt", "lastReadSeq", "unreadCount", "version",
                               "roles", "frozen", "slowModeSeconds", "muted"])
        #expect(value["memberCount"] == .number("2"))
        #expect(value["lastReadSeq"] == .number("3"))
        #expect(value["unreadCount"] == .number("2"))
        #expect(value["id"] == .string("c_42"))
        #expect(value["type"] == .string("group"))
        #expect(value["name"] == .string("Team"))
        #expect(value["members"] == .array([.string("alice"), .string("bob")]))
        #expect(value["distinct"] == .bool(true))
        #expect(value["isOneToOne"] == .bool(true))
        #expect(value["pushFromBlockedUsers"] == .bool(true))
        #expect(value["createdAt"] == .number("100"))
        #expect(value["lastMessage"] == .null)
        #expect(value["lastActivityAt"] == .number("100"))
        #expect(value["createdBy"] == nil)
    }

    @Test("Channel: open type, empty members, embedded lastMessage")
    func channelWithMessage() throws {
        let channel = Channel(id: "o", type: .open, members: [], createdAt: 1, createdBy: "")
        let value = try written { WireEncoding.write(channel, lastMessage: Self.message, lastActivityAt: 1_700_000_000_000, to: &$0) }
        #expect(value["type"] == .string("open"))
        #expect(value["members"] == .array([]))
        #expect(value["distinct"] == .bool(false))
        #expect(value["isOneToOne"] == .bool(false))
        #expect(value["pushFromBlockedUsers"] == .bool(false))
        #expect(value["lastActivityAt"] == .number("1700000000000"))
        let embedded = try #require(value["lastMessage"])
        let direct = try written { WireEncoding.write(Self.message, to: &$0) }
        #expect(embedded == direct)
    }

    // MARK: frames

    @Test("ok reply: id echoed exactly, type ok, result")
    func okReply() throws {
        for id: JSONValue in [.number("17"), .number("1.50e3"), .string("r-1"), .null] {
            let bytes = WireEncoding.ok(id: id) { w in
                w.beginObject(); w.key("x"); w.int(1); w.endObject()
            }
            let value = try JSONParser.parse(bytes)
            #expect(value.keys == ["id", "type", "result"])
            #expect(value["id"] == id)
            #expect(value["type"] == .string("ok"))
            #expect(value["result"] == .object(JSONObject([("x", .number("1"))])))
        }
        let empty = try JSONParser.parse(WireEncoding.ok(id: .number("1")) { w in w.beginObject(); w.endObject() })
        #expect(empty["result"] == .object(JSONObject()))
    }

    @Test("error reply: code and message; retryAfterMs only when set")
    func errorReply() throws {
        let plain = try JSONParser.parse(WireEncoding.error(id: .string("q"), ChatError(.unknownType, "no \"such\" type\n")))
        #expect(plain.keys == ["id", "type", "error"])
        #expect(plain["id"] == .string("q"))
        #expect(plain["type"] == .string("error"))
        #expect(plain["error"]?.keys == ["code", "message"])
        #expect(plain["error"]?["code"] == .string("ERR_UNKNOWN_TYPE"))
        #expect(plain["error"]?["message"] == .string("no \"such\" type\n"))
        #expect(plain["error"]?["retryAfterMs"] == nil)

        let limited = try JSONParser.parse(WireEncoding.error(id: .number("17"), ChatError(.rateLimited, "slow down", retryAfterMs: 120)))
        #expect(limited["id"] == .number("17"))
        #expect(limited["error"]?.keys == ["code", "message", "retryAfterMs"])
        #expect(limited["error"]?["code"] == .string("ERR_RATE_LIMITED"))
        #expect(limited["error"]?["retryAfterMs"] == .number("120"))

        let zero = try JSONParser.parse(WireEncoding.error(id: .null, ChatError(.rateLimited, "", retryAfterMs: 0)))
        #expect(zero["id"] == .null)
        #expect(zero["error"]?["retryAfterMs"] == .number("0"))
    }

    @Test("§11 error codes on the wire")
    func errorCodes() {
        let expected: [(ErrorCode, String)] = [
            (.badRequest, "ERR_BAD_REQUEST"), (.unknownType, "ERR_UNKNOWN_TYPE"), (.notLoggedIn, "ERR_NOT_LOGGED_IN"),
            (.tokenExpired, "ERR_TOKEN_EXPIRED"), (.userNotFound, "ERR_UID_NOT_FOUND"),
            (.cannotBlockSelf, "ERR_CANNOT_BLOCK_SELF"), (.invalidLimit, "ERR_INVALID_LIMIT"),
            (.tooManyIDs, "ERR_TOO_MANY_IDS"), (.invalidCursor, "ERR_INVALID_CURSOR"),
            (.channelNotFound, "ERR_CHANNEL_NOT_FOUND"), (.notAMember, "ERR_NOT_A_MEMBER"),
            (.messageTooLong, "ERR_MESSAGE_TOO_LONG"), (.rateLimited, "ERR_RATE_LIMITED"),
            (.forbidden, "ERR_FORBIDDEN"), (.internalError, "ERR_INTERNAL"),
        ]
        for (code, text) in expected { #expect(code.rawValue == text) }
    }

    @Test("event envelope: no id, type event, event name, data")
    func eventEnvelope() throws {
        let value = try JSONParser.parse(WireEncoding.event("message.new") { WireEncoding.write(Self.message, to: &$0) })
        #expect(value.keys == ["type", "event", "data"])
        #expect(value["id"] == nil)
        #expect(value["type"] == .string("event"))
        #expect(value["event"] == .string("message.new"))
        #expect(value["data"]?["id"] == .string("m_1"))
        #expect(value["data"]?["seq"] == .number("7"))

        let blocked = try JSONParser.parse(WireEncoding.event("user.blocked") { w in
            w.beginObject(); w.key("userId"); w.string("bob"); w.endObject()
        })
        #expect(blocked == .object(JSONObject([("type", .string("event")), ("event", .string("user.blocked")),
                                               ("data", .object(JSONObject([("userId", .string("bob"))])))])))
    }

    // MARK: small pure helpers

    @Test("ManualClock moves only when told")
    func manualClock() {
        let clock = ManualClock(1_000)
        #expect(clock.now() == 1_000)
        clock.advance(by: 250)
        #expect(clock.now() == 1_250)
        #expect(ManualClock().now() == 1_700_000_000_000)
    }

    @Test("IdentifierGenerator: prefix, URL-safe, unique, ordered by time")
    func identifiers() {
        let generator = IdentifierGenerator()
        var seen = Set<String>()
        for _ in 0..<1_000 {
            let id = generator.make(prefix: "m_", at: 1_700_000_000_000)
            #expect(id.hasPrefix("m_"))
            #expect(id.dropFirst(2).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
            seen.insert(id)
        }
        #expect(seen.count == 1_000)
        #expect(generator.make(prefix: "c_", at: 1_700_000_000_000) < generator.make(prefix: "c_", at: 1_800_000_000_000))
    }
}
